package dev.idem.core;

import java.time.Duration;
import java.util.Optional;

/**
 * The store: the one interface behind which every backend (memory, Redis, Redis Cluster, MySQL,
 * PostgreSQL, the control API of {@code idem serve}) implements the engine of docs/design.md with
 * identical semantics, and on the same data as the C++ engine (a record written here is read by
 * {@code idem serve} and the other way round).
 *
 * <p>Every operation blocks until the store answers, within the backend's own deadline. Outcomes
 * such as {@code FENCED} or {@link LockOutcome.Busy} are values. An exception means the store
 * could not answer: {@link NotAppliedException} (nothing happened; retrying is safe), {@link
 * OutcomeUnknownException} (sent, no answer: it may have taken effect), {@link
 * StoreConfigurationException} (fix the store first), {@link StoreProtocolException} (an answer
 * that cannot be read). Arguments that can never be valid (an empty key, a zero lease, a null)
 * throw {@link IllegalArgumentException} or {@link NullPointerException} before anything is sent.
 *
 * <p>Scopes, keys, owners, lock names and tokens are text, stored as their UTF-8 bytes;
 * fingerprints and results are bytes, stored as they are.
 *
 * <p>Thread safety: all implementations are safe for concurrent use from any number of threads.
 */
public interface IdemStore extends AutoCloseable {

  /** What this backend offers. */
  StoreTraits traits();

  /**
   * The largest result, in bytes, this store holds: {@link #commit} refuses a larger one with
   * {@link IllegalArgumentException} before sending it. Read once when the store opens.
   */
  long maxResultBytes();

  // ---- records ------------------------------------------------------------------------------

  /**
   * Claims (scope, key), or says why not: a differing non-empty fingerprint → mismatch (checked
   * first, changes nothing); done → replay; pending with a live lease → in progress; no live
   * record → acquired; pending with an expired lease → acquired, recovered, naming the fence it
   * took over.
   */
  BeginOutcome begin(BeginArgs args);

  /**
   * Completes a claim: pending with this fence → done (expires at now + retention); done with
   * this fence → COMMITTED, unchanged (a retry keeps the first result); with a non-empty
   * overUncertain, also a live done record of another fence whose result starts with those bytes
   * → replaced (result, this fence, expiry). Anything else → FENCED.
   *
   * @throws IllegalArgumentException a result larger than {@link #maxResultBytes()}
   */
  CommitOutcome commit(CommitArgs args);

  /** Gives a claim back: pending with this fence → removed (a retry acquires with a greater fence). */
  ReleaseOutcome release(ReleaseArgs args);

  /**
   * Gives back a pending claim (lease live or not) whose begin named this non-empty owner,
   * exactly as release would; anything else → FENCED, nothing changes. For a caller whose begin
   * answer was lost and so never learned the fence.
   */
  ReleaseOutcome abandon(String scope, String key, String owner);

  /** Renews a claim: pending with this fence → lease until now + lease (the expiry moves along). */
  ExtendOutcome extend(String scope, String key, long fence, Duration lease);

  /** The live record, or empty when absent or expired. */
  Optional<IdemRecord> get(String scope, String key);

  /** An operator's purge: true when a live record was removed. */
  boolean delete(String scope, String key);

  /**
   * One page of live records matching the filters; see {@link StoreTraits#orderedList()} for the
   * order. Each call does bounded work.
   *
   * @throws IllegalArgumentException a cursor this store did not hand out
   */
  ListPage list(ListArgs args);

  /** Deletes expired records, tokens and locks where the store does not expire them itself; how many records went. */
  long sweep();

  // ---- one-time tokens ----------------------------------------------------------------------

  /** A fresh token of at least 128 random bits as URL-safe text, valid for ttl, bound to scope. */
  String issueToken(String scope, Duration ttl);

  /** Of any number of concurrent consumers exactly one gets CONSUMED. */
  ConsumeOutcome consumeToken(String scope, String token);

  /** Re-arms a token issued to this scope (consumed or not) for ttl. */
  RestoreOutcome restoreToken(String scope, String token, Duration ttl);

  // ---- locks --------------------------------------------------------------------------------

  /**
   * Free or expired → locked with a new fence (greater than any handed out for the name before);
   * held by the same owner → locked again, same fence, ttl renewed; held by another → busy.
   */
  LockOutcome lock(String name, String owner, Duration ttl);

  /** Only the current, unexpired owner releases it. */
  UnlockOutcome unlock(String name, String owner);

  /** Only the current, unexpired owner extends it, to ttl from now. */
  LockExtendOutcome extendLock(String name, String owner, Duration ttl);

  // ---- health -------------------------------------------------------------------------------

  /** Returns when the store answers; throws as any operation does when it cannot. */
  void ping();

  /** Releases what the store holds (connections it opened itself); calls in flight finish first. */
  @Override
  default void close() {}
}
