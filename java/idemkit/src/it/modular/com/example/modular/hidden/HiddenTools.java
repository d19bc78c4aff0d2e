package com.example.modular.hidden;

import dev.idemkit.Tool;

/** A tool in a package the module neither exports nor opens. */
public final class HiddenTools {
    @Tool(name = "hidden")
    public String hidden() {
        return "never called";
    }
}
