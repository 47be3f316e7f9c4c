package dev.idem.client;

/** JSON that could not be read, or a value of another kind than the one asked for. */
public class JsonException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public JsonException(String message) {
    super(message);
  }
}
