package dev.idem.redis;

import java.nio.charset.StandardCharsets;
import net.openhft.hashing.LongHashFunction;

/**
 * Where idem keeps things in Redis, exactly as the C++ store names them (src/stores/redis/
 * redis_keys.cpp), so that a record written here is read by {@code idem serve} and the other way
 * round. Every key is {@code <prefix>{<tag>}<kind>:<name>} where {@code <tag>} is 16 hex digits of
 * the XXH3-64 hash of the tag's source: Redis Cluster places a key by its {hash tag}, so the keys
 * one script touches share a slot. A scope may hold any byte, so names are {@code <scope UTF-8
 * length>:<scope><key>}. A record's or token's tag hashes its scope and the part of its key after
 * the last ':' (so the gateway's token-mode record "space:token" shares the token's slot); a
 * lock's tag hashes its name.
 */
public final class RedisKeys {
  private RedisKeys() {}

  private static final LongHashFunction XXH3 = LongHashFunction.xx3();
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  /** A record's key and its fence key. */
  public record Pair(byte[] main, byte[] fence) {}

  public static Pair record(String prefix, String scope, String key) {
    byte[] name = scoped(scope, key);
    long h = XXH3.hashBytes(slotSource(scope, key));  // one tag for both keys
    return new Pair(tagged(prefix, h, name, "r"), tagged(prefix, h, name, "rf"));
  }

  public static byte[] token(String prefix, String scope, String token) {
    return tagged(prefix, slotSource(scope, token), scoped(scope, token), "t");
  }

  public static Pair lock(String prefix, String name) {
    byte[] n = name.getBytes(StandardCharsets.UTF_8);
    long h = XXH3.hashBytes(n);
    return new Pair(tagged(prefix, h, n, "l"), tagged(prefix, h, n, "lf"));
  }

  /** True when the record (scope, key) and the token (scope, token) share a cluster slot. */
  public static boolean sameSlot(String scope, String key, String token) {
    return slot(record("", scope, key).main()) == slot(token("", scope, token));
  }

  static byte[] scoped(String scope, String name) {
    byte[] s = scope.getBytes(StandardCharsets.UTF_8), n = name.getBytes(StandardCharsets.UTF_8);
    byte[] len = (s.length + ":").getBytes(StandardCharsets.US_ASCII);
    byte[] out = new byte[len.length + s.length + n.length];
    System.arraycopy(len, 0, out, 0, len.length);
    System.arraycopy(s, 0, out, len.length, s.length);
    System.arraycopy(n, 0, out, len.length + s.length, n.length);
    return out;
  }

  private static byte[] slotSource(String scope, String key) {
    int colon = key.lastIndexOf(':');
    return scoped(scope, colon < 0 ? key : key.substring(colon + 1));
  }

  private static byte[] tagged(String prefix, byte[] tagSource, byte[] name, String kind) {
    return tagged(prefix, XXH3.hashBytes(tagSource), name, kind);
  }

  private static byte[] tagged(String prefix, long h, byte[] name, String kind) {
    byte[] p = prefix.getBytes(StandardCharsets.UTF_8), k = kind.getBytes(StandardCharsets.US_ASCII);
    byte[] out = new byte[p.length + 18 + k.length + 1 + name.length];
    int at = 0;
    System.arraycopy(p, 0, out, at, p.length);
    at += p.length;
    out[at++] = '{';
    for (int shift = 60; shift >= 0; shift -= 4) out[at++] = (byte) HEX[(int) (h >>> shift) & 15];
    out[at++] = '}';
    System.arraycopy(k, 0, out, at, k.length);
    at += k.length;
    out[at++] = ':';
    System.arraycopy(name, 0, out, at, name.length);
    return out;
  }

  /** A SCAN MATCH pattern that every record key of the scope (any when null) with the key prefix matches. */
  static byte[] recordPattern(String prefix, String scope, String keyPrefix) {
    StringBuilder b = new StringBuilder(globEscape(prefix)).append("{????????????????}r:");
    if (scope != null)
      b.append(scope.getBytes(StandardCharsets.UTF_8).length).append(':').append(globEscape(scope)).append(globEscape(keyPrefix));
    return b.append('*').toString().getBytes(StandardCharsets.UTF_8);
  }

  static String globEscape(String text) {
    StringBuilder b = new StringBuilder();
    for (char c : text.toCharArray()) {
      if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') b.append('\\');
      b.append(c);
    }
    return b.toString();
  }

  /** The scope and key of a record key, or null for any other key. */
  static String[] parseRecord(String prefix, byte[] redisKey) {
    byte[] p = prefix.getBytes(StandardCharsets.UTF_8);
    int tagged = 1 + 16 + 1 + 2;
    if (redisKey.length < p.length + tagged) return null;
    for (int i = 0; i < p.length; i++) if (redisKey[i] != p[i]) return null;
    int at = p.length + tagged, colon = -1;
    for (int i = at; i < redisKey.length && i < at + 11; i++) {
      if (redisKey[i] == ':') {
        colon = i;
        break;
      }
      if (redisKey[i] < '0' || redisKey[i] > '9') return null;
    }
    if (colon <= at) return null;
    int scopeLen = Integer.parseInt(new String(redisKey, at, colon - at, StandardCharsets.US_ASCII));
    int rest = redisKey.length - colon - 1;
    if (scopeLen >= rest) return null;
    String scope = new String(redisKey, colon + 1, scopeLen, StandardCharsets.UTF_8);
    String key = new String(redisKey, colon + 1 + scopeLen, rest - scopeLen, StandardCharsets.UTF_8);
    return java.util.Arrays.equals(record(prefix, scope, key).main(), redisKey) ? new String[] {scope, key} : null;
  }

  /** Redis Cluster's slot of a key: CRC16 (XMODEM) of its hash tag, or of the whole key. */
  public static int slot(byte[] key) {
    int from = 0, to = key.length;
    for (int i = 0; i < key.length; i++) {
      if (key[i] == '{') {
        for (int j = i + 1; j < key.length; j++) {
          if (key[j] == '}') {
            if (j > i + 1) {
              from = i + 1;
              to = j;
            }
            break;
          }
        }
        break;
      }
    }
    int crc = 0;
    for (int i = from; i < to; i++) {
      crc ^= (key[i] & 0xff) << 8;
      for (int b = 0; b < 8; b++) crc = (crc & 0x8000) != 0 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc & 16383;
  }
}
