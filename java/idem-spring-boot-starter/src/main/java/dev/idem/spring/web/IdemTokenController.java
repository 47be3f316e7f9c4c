package dev.idem.spring.web;

import dev.idem.spring.IdemTokens;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.http.CacheControl;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /_idem/tokens} ({@code idem.tokens.path}): a one-time token for the current subject,
 * as the gateway issues them: {@code 201 {"token": "...", "expires_in": <seconds>}} with {@code
 * Cache-Control: no-store}.
 */
@RestController
public class IdemTokenController {
  private final IdemTokens tokens;

  public IdemTokenController(IdemTokens tokens) {
    this.tokens = tokens;
  }

  @PostMapping(path = "${idem.tokens.path:/_idem/tokens}", produces = "application/json")
  public ResponseEntity<Map<String, Object>> issue() {
    IdemTokens.Issued t = tokens.issueToken();
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("token", t.token());
    body.put("expires_in", t.expiresIn().toSeconds());
    return ResponseEntity.status(HttpStatus.CREATED).cacheControl(CacheControl.noStore()).body(body);
  }
}
