package dev.idem.client;

/** The key was used before with a different fingerprint (another request); nothing ran. */
public class KeyReusedException extends CallRefusedException {
  private static final long serialVersionUID = 1L;

  public KeyReusedException() {
    super("key reused with a different fingerprint");
  }
}
