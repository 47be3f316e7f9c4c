package dev.idem.examples.springshop;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** Lowercase hex HMAC-SHA256(secret, text), compared in constant time (examples/shop/callback_sign.cpp). */
final class Signatures {
  private Signatures() {}

  static String sign(String secret, String text) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
      return HexFormat.of().formatHex(mac.doFinal(text.getBytes(StandardCharsets.UTF_8)));
    } catch (java.security.GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  static boolean ok(String secret, String text, String signature) {
    if (signature == null || signature.isEmpty()) return false;
    return MessageDigest.isEqual(sign(secret, text).getBytes(StandardCharsets.UTF_8),
        signature.getBytes(StandardCharsets.UTF_8));
  }
}
