/**
 * A modular application that uses idemkit from the module path. It requires only dev.idemkit:
 * Jackson's {@code TypeReference} comes with it ({@code requires transitive}). Its tool package is
 * opened to dev.idemkit, which calls the tool methods; {@code com.example.modular.hidden} is not,
 * to show what registering a tool there says.
 */
module com.example.modular {
    requires dev.idemkit;

    opens com.example.modular to
            dev.idemkit;
}
