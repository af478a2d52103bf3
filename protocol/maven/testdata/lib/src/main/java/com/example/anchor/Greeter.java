package com.example.anchor;

/** The library class the app prints from. */
public final class Greeter {
    private Greeter() {}

    /** Returns the greeting; the tests rewrite GREETING to build distinct jars. */
    public static String greet() {
        return "GREETING";
    }
}
