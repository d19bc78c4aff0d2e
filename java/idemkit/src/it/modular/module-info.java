module com.example.modular {
    // Jackson's databind (TypeReference, ObjectMapper) comes with it: dev.idemkit requires it
    // transitively.
    requires dev.idemkit;

    // idemkit calls the @Tool methods: their package is opened to it (or exported). The package
    // com.example.modular.hidden is not, to show what registering a tool there says.
    opens com.example.modular to
            dev.idemkit;
}
