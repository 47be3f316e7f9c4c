package dev.idem.spring;

import dev.idem.core.OnUncertain;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * The {@code idem.*} properties (docs/spring.md, "Properties", lists each with its default).
 *
 * @param enabled false: {@code @Idempotent} and {@code @IdempotentListener} methods run
 *     unprotected (the store is still opened; the comparison runs of the shop use it)
 * @param store where the records live
 * @param defaults what an annotation leaves empty
 * @param web HTTP requests: the subject, the headers, the body kept for fingerprints
 * @param tokens one-time tokens for forms
 * @param listener message listeners
 * @param runner the claim runner's background work
 */
@ConfigurationProperties("idem")
public record IdemProperties(@DefaultValue("true") boolean enabled, @DefaultValue Store store,
                             @DefaultValue Defaults defaults, @DefaultValue Web web, @DefaultValue Tokens tokens,
                             @DefaultValue Listener listener, @DefaultValue Runner runner) {

  /** Which store backs the records. */
  public enum StoreType {
    /** {@code uri} when set; else the control API when its base-uri is set; else the application's Redis; else its DataSource. */
    AUTO,
    REDIS,
    JDBC,
    CONTROL_API,
    /** In this process only: tests, a single instance. */
    MEMORY
  }

  /**
   * @param type which store; AUTO chooses as {@link StoreType#AUTO} says
   * @param uri an idem store URI ({@code redis://host:6379?prefix=idem:}, {@code redis-cluster://…})
   *     opened by idem with a client of its own, instead of the application's connection
   * @param timeout a store call not answered within it is an unknown outcome
   */
  public record Store(@DefaultValue("auto") StoreType type, String uri, @DefaultValue("5s") Duration timeout,
                      @DefaultValue Redis redis, @DefaultValue Jdbc jdbc, @DefaultValue ControlApi controlApi) {}

  /**
   * @param prefix every key idem writes starts with it
   * @param allowEviction accept a server whose maxmemory-policy may evict records (refused otherwise)
   */
  public record Redis(@DefaultValue("idem:") String prefix, @DefaultValue("false") boolean allowEviction) {}

  /**
   * @param tablePrefix the tables are {@code <prefix>records}, {@code tokens}, {@code locks}
   * @param createSchema create them at start (false: a DBA ran {@code idem schema --store URI})
   */
  public record Jdbc(@DefaultValue("idem_") String tablePrefix, @DefaultValue("true") boolean createSchema) {}

  /**
   * @param baseUri the admin listener of a running {@code idem serve} ({@code http://127.0.0.1:9901})
   * @param token its admin token
   */
  public record ControlApi(String baseUri, String token) {}

  /**
   * @param lease how long a claim is held unless renewed (renewed every lease/3 while the method runs)
   * @param retention how long a result is replayed
   * @param waitFor how long a repeat waits for a first call still running
   * @param onUncertain HOLD (at most once) or RETRY (at least once)
   * @param onStoreError REJECT or PASS
   * @param releaseWhen a SpEL over {@code #result}: true releases the key ({@code "#result.code != 0"})
   */
  public record Defaults(@DefaultValue("60s") Duration lease, @DefaultValue("24h") Duration retention,
                         @DefaultValue("5s") Duration waitFor, @DefaultValue("hold") OnUncertain onUncertain,
                         @DefaultValue("reject") StoreErrorPolicy onStoreError, String releaseWhen) {}

  /**
   * @param subject whose records: {@code principal} (the authenticated user's name; "" without
   *     one), {@code header:NAME}, {@code header-hash:NAME} (its SHA-256: credentials never reach
   *     the store) or {@code none}
   * @param keyHeader the header a client's idempotency key comes in
   * @param tokenHeader the header a one-time token comes in
   * @param tokenParameter the form field a one-time token comes in
   * @param maxBody the most of a request body kept for its fingerprint ({@code 413 body-too-large} past it)
   */
  public record Web(@DefaultValue("principal") String subject, @DefaultValue("Idempotency-Key") String keyHeader,
                    @DefaultValue("Idempotency-Token") String tokenHeader,
                    @DefaultValue("_idem_token") String tokenParameter, @DefaultValue("1MB") DataSize maxBody) {}

  /**
   * @param enabled serve {@code POST <path>}
   * @param path where tokens are issued
   * @param ttl how long a token is valid
   */
  public record Tokens(@DefaultValue("true") boolean enabled, @DefaultValue("/_idem/tokens") String path,
                       @DefaultValue("10m") Duration ttl) {}

  /** What a listener does with a message that has no key. */
  public enum MissingKey {
    /** Reject without requeue (to the dead-letter exchange when the queue has one) and log it. */
    REJECT,
    /** Run the listener unprotected. */
    PROCESS
  }

  /**
   * @param onUncertain RETRY (the default: a crashed consumer's message runs again) or HOLD
   * @param missingKey what a message without a key gets
   * @param inProgressWait the longest a delivery waits for another consumer's run of the same
   *     message, before it is requeued; empty: the lease
   */
  public record Listener(@DefaultValue("retry") OnUncertain onUncertain, @DefaultValue("reject") MissingKey missingKey,
                         Duration inProgressWait) {}

  /**
   * @param maxSettles settles retried in the background at once
   * @param maxPendingBytes results held by settles retried in the background
   * @param threads the runner's background threads (renewals, retries)
   */
  public record Runner(@DefaultValue("10000") int maxSettles, @DefaultValue("256MB") DataSize maxPendingBytes,
                       @DefaultValue("2") int threads) {}
}
