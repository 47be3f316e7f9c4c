package dev.idem.examples; final class Placeholder {}
