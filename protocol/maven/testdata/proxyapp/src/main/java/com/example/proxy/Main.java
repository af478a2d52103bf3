package com.example.proxy;

import org.apache.commons.text.WordUtils;

public class Main {
    public static void main(String[] args) {
        System.out.println(WordUtils.capitalize("resolved through the proxy"));
    }
}
