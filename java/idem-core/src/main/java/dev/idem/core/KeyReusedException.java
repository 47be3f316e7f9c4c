package dev.idem.core;

/** The key was used with a different fingerprint: nothing ran (HTTP: 422). */
public class KeyReusedException extends CallRefusedException {
  private static final long serialVersionUID = 1L;

  public KeyReusedException() {
    super("the key was used with a different fingerprint (a different request): nothing ran");
  }
}
