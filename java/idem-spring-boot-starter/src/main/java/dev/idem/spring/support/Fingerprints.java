package dev.idem.spring.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.springframework.util.ClassUtils;

/**
 * Fingerprints: what makes a repeat "the same request". Values are written as JSON by the
 * application's ObjectMapper with every object's members sorted, then hashed (SHA-256, in hex), so the
 * same arguments always give the same bytes, and never by toString() (whose output for most types
 * names an address, a hash code or nothing at all).
 */
public final class Fingerprints {
  /** Arguments that are not the request's data: left out of an ARGUMENTS fingerprint. */
  private static final String[] NOT_DATA = {
      "jakarta.servlet.ServletRequest", "jakarta.servlet.ServletResponse", "jakarta.servlet.http.HttpSession",
      "java.security.Principal", "org.springframework.validation.Errors", "org.springframework.ui.Model",
      "org.springframework.ui.ModelMap", "org.springframework.web.context.request.WebRequest",
      "org.springframework.web.bind.support.SessionStatus", "org.springframework.web.util.UriComponentsBuilder",
      "org.springframework.web.multipart.MultipartFile", "org.springframework.http.HttpHeaders",
      "org.springframework.amqp.core.Message", "com.rabbitmq.client.Channel", "org.springframework.messaging.Message",
      "java.io.InputStream", "java.io.Reader", "java.io.OutputStream", "java.io.Writer"};

  private final ObjectMapper mapper;
  private final List<Class<?>> notData = new ArrayList<>();

  public Fingerprints(ObjectMapper mapper) {
    this.mapper = mapper;
    ClassLoader cl = Fingerprints.class.getClassLoader();
    for (String name : NOT_DATA) {
      if (ClassUtils.isPresent(name, cl)) notData.add(ClassUtils.resolveClassName(name, cl));
    }
  }

  /** The hash of raw bytes (a request as {@link RequestView#fingerprintInput()} gives it). */
  public static byte[] ofBytes(byte[] input) {
    return sha256(input);
  }

  /** The hash of these values as canonical JSON. */
  public byte[] ofValues(List<?> values) {
    return sha256(canonicalJson(values));
  }

  /** The hash of the arguments that are data (see NOT_DATA), as canonical JSON. */
  public byte[] ofArguments(Object[] args) {
    List<Object> data = new ArrayList<>(args.length);
    for (Object a : args) {
      if (a == null || !isNotData(a)) data.add(a);
    }
    return ofValues(data);
  }

  private boolean isNotData(Object a) {
    for (Class<?> c : notData) {
      if (c.isInstance(a)) return true;
    }
    return false;
  }

  /** JSON of {@code value} with every object's members in name order. */
  public byte[] canonicalJson(Object value) {
    try {
      JsonNode tree = mapper.valueToTree(value);
      return mapper.writeValueAsBytes(sorted(tree));
    } catch (IllegalArgumentException | com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("idem: cannot write the fingerprint's values as JSON (" + e.getMessage()
          + "); name the fields that make a request with @Idempotent(fingerprint = {\"#req.amount\", ...})", e);
    }
  }

  private static JsonNode sorted(JsonNode node) {
    if (node == null) return null;
    if (node.isObject()) {
      TreeMap<String, JsonNode> members = new TreeMap<>();
      for (Map.Entry<String, JsonNode> e : node.properties()) members.put(e.getKey(), sorted(e.getValue()));
      ObjectNode out = JsonNodeFactory.instance.objectNode();
      members.forEach(out::set);
      return out;
    }
    if (node.isArray()) {
      var out = JsonNodeFactory.instance.arrayNode(node.size());
      for (JsonNode n : node) out.add(sorted(n));
      return out;
    }
    return node;
  }

  /** SHA-256 as 64 hex digits: text every store takes (the control API's fingerprints are text). */
  static byte[] sha256(byte[] input) {
    MessageDigest d = sha256();
    d.update(input);
    return hex(d);
  }

  private static final MessageDigest SHA256;

  static {
    try {
      SHA256 = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A fresh SHA-256 digest (a clone of one made once: no provider lookup per call). */
  public static MessageDigest sha256() {
    try {
      return (MessageDigest) SHA256.clone();
    } catch (CloneNotSupportedException e) {
      try {
        return MessageDigest.getInstance("SHA-256");
      } catch (NoSuchAlgorithmException x) {
        throw new IllegalStateException(x);
      }
    }
  }

  /** The digest's value as {@link #sha256(byte[])} gives it: 64 hex digits. */
  public static byte[] hex(MessageDigest d) {
    byte[] h = d.digest();
    byte[] out = new byte[h.length * 2];
    for (int i = 0; i < h.length; i++) {
      out[2 * i] = HEX[(h[i] >> 4) & 0xf];
      out[2 * i + 1] = HEX[h[i] & 0xf];
    }
    return out;
  }

  private static final byte[] HEX = "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
}
