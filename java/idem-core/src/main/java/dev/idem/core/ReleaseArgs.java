package dev.idem.core;

import java.util.Optional;

/**
 * The arguments of {@link IdemStore#release}.
 *
 * @param restoreToken when present and the release succeeds, that token of the same scope is
 *     re-armed in the same atomic step (as by {@link IdemStore#restoreToken}); when fenced it is
 *     untouched. On a Redis Cluster the token must share the record's slot: the key is the token
 *     or ends in ':' and the token.
 */
public record ReleaseArgs(String scope, String key, long fence, Optional<TokenRestore> restoreToken) {
  public ReleaseArgs {
    Args.scope(scope);
    Args.key(key);
    restoreToken = restoreToken == null ? Optional.empty() : restoreToken;
  }

  public ReleaseArgs(String scope, String key, long fence) {
    this(scope, key, fence, Optional.empty());
  }
}
