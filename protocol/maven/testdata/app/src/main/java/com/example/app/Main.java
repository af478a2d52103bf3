package com.example.app;

import com.example.anchor.Greeter;

/** Prints the library's greeting. */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        System.out.println(Greeter.greet());
    }
}
