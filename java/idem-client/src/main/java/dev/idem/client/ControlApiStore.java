package dev.idem.client;

import dev.idem.core.BeginArgs;
import dev.idem.core.CommitArgs;
import dev.idem.core.IdemRecord;
import dev.idem.core.IdemStore;
import dev.idem.core.ListArgs;
import dev.idem.core.ListPage;
import dev.idem.core.RecordState;
import dev.idem.core.ReleaseArgs;
import dev.idem.core.StoreTraits;
import dev.idem.core.StoredResult;
import dev.idem.core.UncertainMark;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The engine through the control API of a running {@code idem serve} (docs/control-api.md): one
 * more {@link IdemStore}, so that {@link dev.idem.core.IdempotentCall}, {@link
 * dev.idem.core.Deduplicator} and the claim runner work on it unchanged. Each operation is one
 * call of {@link Idem}.
 *
 * <p>What the control API cannot carry: results are JSON, so a commit takes the stored forms
 * {@link StoredResult.Json} (committed as that JSON, which the gateway stores byte for byte in the
 * same form the other backends write) and {@link StoredResult.Uncertain} (committed as {@code
 * {"idem_uncertain": "<mark>"}}, read back as the mark; the gateway's own uncertain records replay
 * as JSON null, read as an uncertain mark too); anything else is refused. Fingerprints travel as
 * text (UTF-8). {@link CommitArgs#overUncertain()} and {@link ReleaseArgs#restoreToken()} are not
 * passed ({@link StoreTraits#overUncertain()} and {@link StoreTraits#tokenRestoreOnRelease()} are
 * false); replays name no fence and no expiry; {@link #get} shows no fingerprint and no owner.
 *
 * <p>Failures: the client's exceptions become the engine's: nothing applied ({@link
 * dev.idem.core.NotAppliedException}, {@link dev.idem.core.StoreUnavailableException} with the
 * gateway's Retry-After), outcome unknown ({@link dev.idem.core.OutcomeUnknownException}), a
 * refused token ({@link dev.idem.core.StoreConfigurationException}), a refused request ({@link
 * IllegalArgumentException}), an unreadable answer ({@link dev.idem.core.StoreProtocolException}).
 *
 * <p>Thread safety: safe for concurrent use, as {@link Idem} is.
 */
public final class ControlApiStore implements IdemStore {
  private static final StoreTraits TRAITS = new StoreTraits("control-api", true, true, false, false, false);
  private static final String UNCERTAIN = "idem_uncertain";
  private final Idem idem;

  public ControlApiStore(Idem idem) {
    this.idem = Objects.requireNonNull(idem, "idem");
  }

  public Idem client() {
    return idem;
  }

  @Override
  public StoreTraits traits() {
    return TRAITS;
  }

  /**
   * The admin listener reads request bodies of up to 1 MiB: a commit's result, written as JSON in
   * the body, is held to 1 MiB less room for the rest of the body.
   */
  @Override
  public long maxResultBytes() {
    return (1L << 20) - (16L << 10);
  }

  private static <T> T call(Supplier<T> body) {
    try {
      return body.get();
    } catch (StoreUnavailableException e) {
      throw new dev.idem.core.StoreUnavailableException(e.getMessage(), e.retryAfter(), e);
    } catch (NotAppliedException e) {
      throw new dev.idem.core.NotAppliedException(e.getMessage(), e);
    } catch (OutcomeUnknownException e) {
      throw new dev.idem.core.OutcomeUnknownException(e.getMessage(), e);
    } catch (UnauthorizedException e) {
      throw new dev.idem.core.StoreConfigurationException(e.getMessage(), e);
    } catch (RequestInvalidException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    } catch (ProtocolException | JsonException e) {
      throw new dev.idem.core.StoreProtocolException(e.getMessage(), e);
    }
  }

  private static String text(byte[] fingerprint) {
    try {
      return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(fingerprint)).toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("the control API takes fingerprints as text: this one is not UTF-8");
    }
  }

  /** The stored form of a result the control API answered. */
  static byte[] stored(JsonValue v) {
    if (v == null || v.isNull()) return StoredResult.encode(new StoredResult.Uncertain(new UncertainMark(0, "", 0)));
    if (v instanceof JsonValue.Obj o && o.fields().size() == 1 && o.fields().get(UNCERTAIN) instanceof JsonValue.Str s)
      return ("U" + s.value()).getBytes(StandardCharsets.UTF_8);
    return StoredResult.encode(new StoredResult.Json(v.toJson()));
  }

  /** The JSON a stored form is committed as. */
  static JsonValue committed(byte[] result) {
    StoredResult r = StoredResult.decode(result);
    if (r instanceof StoredResult.Json j) return JsonValue.parse(j.text());
    if (r instanceof StoredResult.Uncertain u) {
      byte[] mark = u.mark().encode(StoredResult.UNCERTAIN_MARKER);
      return JsonValue.object(UNCERTAIN, new String(mark, 1, mark.length - 1, StandardCharsets.UTF_8));
    }
    throw new IllegalArgumentException("the control API stores JSON results only, not " + r.getClass().getSimpleName());
  }

  @Override
  public dev.idem.core.BeginOutcome begin(BeginArgs a) {
    BeginOutcome b = call(() -> idem.begin(a.scope(), a.key(), text(a.fingerprint()), a.lease(), a.retention(),
        a.owner().isEmpty() ? null : a.owner()));
    if (b instanceof BeginOutcome.Acquired x) return new dev.idem.core.BeginOutcome.Acquired(x.fence(), x.recovered(), x.previousFence());
    if (b instanceof BeginOutcome.Replay r) return new dev.idem.core.BeginOutcome.Replay(0, stored(r.result()), Duration.ZERO);
    if (b instanceof BeginOutcome.InProgress p) return new dev.idem.core.BeginOutcome.InProgress(p.retryAfter());
    return new dev.idem.core.BeginOutcome.Mismatch();
  }

  @Override
  public dev.idem.core.CommitOutcome commit(CommitArgs a) {
    if (a.result().length > maxResultBytes())
      throw new IllegalArgumentException("the result is " + a.result().length + " bytes, more than the "
          + maxResultBytes() + " bytes the control API takes in one commit");
    JsonValue result = committed(a.result());
    CommitOutcome c = call(() -> idem.commit(a.scope(), a.key(), a.fence(), result, a.retention()));
    return c == CommitOutcome.COMMITTED ? dev.idem.core.CommitOutcome.COMMITTED : dev.idem.core.CommitOutcome.FENCED;
  }

  @Override
  public dev.idem.core.ReleaseOutcome release(ReleaseArgs a) {
    if (a.fence() <= 0) return dev.idem.core.ReleaseOutcome.FENCED;
    ReleaseOutcome r = call(() -> idem.release(a.scope(), a.key(), a.fence()));
    return r == ReleaseOutcome.RELEASED ? dev.idem.core.ReleaseOutcome.RELEASED : dev.idem.core.ReleaseOutcome.FENCED;
  }

  @Override
  public dev.idem.core.ReleaseOutcome abandon(String scope, String key, String owner) {
    ReleaseOutcome r = call(() -> idem.abandon(scope, key, owner));
    return r == ReleaseOutcome.RELEASED ? dev.idem.core.ReleaseOutcome.RELEASED : dev.idem.core.ReleaseOutcome.FENCED;
  }

  @Override
  public dev.idem.core.ExtendOutcome extend(String scope, String key, long fence, Duration lease) {
    if (fence <= 0) return dev.idem.core.ExtendOutcome.FENCED;
    ExtendOutcome r = call(() -> idem.extend(scope, key, fence, lease));
    return r == ExtendOutcome.EXTENDED ? dev.idem.core.ExtendOutcome.EXTENDED : dev.idem.core.ExtendOutcome.FENCED;
  }

  private static IdemRecord record(StoredRecord s) {
    byte[] result = new byte[0];
    if (s.done()) {
      String kind = s.result().orElse("");
      if (kind.equals("json")) result = stored(s.value().orElse(JsonValue.NULL));
      else if (kind.equals("uncertain")) result = StoredResult.encode(new StoredResult.Uncertain(new UncertainMark(
          s.json().get("uncertain").map(m -> m.asObject().require("fence").asLong()).orElse(0L), "", 0)));
      else if (kind.equals("not_stored")) result = StoredResult.encode(new StoredResult.NotStored(s.responseStatus().orElse(0)));
      else result = StoredResult.encode(new StoredResult.Response(s.responseStatus().orElse(0), List.of(), new byte[0]));
    }
    return new IdemRecord(s.scope(), s.key(), s.done() ? RecordState.DONE : RecordState.PENDING, s.fence(), null,
        s.leaseUntil(), s.expiresAt(), result, "");
  }

  @Override
  public Optional<IdemRecord> get(String scope, String key) {
    return call(() -> idem.getRecord(scope, key)).map(ControlApiStore::record);
  }

  @Override
  public boolean delete(String scope, String key) {
    return call(() -> idem.deleteRecord(scope, key));
  }

  /** The gateway's listing; the key prefix is applied to each page here (a page may come back short). */
  @Override
  public ListPage list(ListArgs a) {
    RecordQuery q = RecordQuery.all().withLimit(a.limit());
    if (a.scope().isPresent()) q = q.withScope(a.scope().get());
    if (a.state().isPresent()) q = q.withState(a.state().get().wireName());
    if (!a.cursor().isEmpty()) q = q.withCursor(a.cursor());
    RecordQuery query = q;
    RecordPage page = call(() -> idem.listRecords(query));
    List<IdemRecord> out = new ArrayList<>();
    for (StoredRecord s : page.records()) {
      IdemRecord r = record(s);
      if (a.matches(r)) out.add(r);
    }
    return new ListPage(out, page.nextCursor().orElse(""));
  }

  /** The gateway sweeps its store itself. */
  @Override
  public long sweep() {
    return 0;
  }

  @Override
  public String issueToken(String scope, Duration ttl) {
    return call(() -> idem.issueToken(scope, ttl));
  }

  @Override
  public dev.idem.core.ConsumeOutcome consumeToken(String scope, String token) {
    return call(() -> idem.consumeToken(scope, token)) == ConsumeOutcome.CONSUMED ? dev.idem.core.ConsumeOutcome.CONSUMED
        : dev.idem.core.ConsumeOutcome.INVALID;
  }

  @Override
  public dev.idem.core.RestoreOutcome restoreToken(String scope, String token, Duration ttl) {
    return call(() -> idem.restoreToken(scope, token, ttl)) == RestoreOutcome.RESTORED
        ? dev.idem.core.RestoreOutcome.RESTORED : dev.idem.core.RestoreOutcome.INVALID;
  }

  @Override
  public dev.idem.core.LockOutcome lock(String name, String owner, Duration ttl) {
    LockOutcome l = call(() -> idem.acquireLock(name, owner, ttl));
    if (l instanceof LockOutcome.Locked k) return new dev.idem.core.LockOutcome.Locked(k.fence());
    return new dev.idem.core.LockOutcome.Busy(((LockOutcome.Busy) l).retryAfter());
  }

  @Override
  public dev.idem.core.UnlockOutcome unlock(String name, String owner) {
    return call(() -> idem.releaseLock(name, owner)) == UnlockOutcome.RELEASED ? dev.idem.core.UnlockOutcome.RELEASED
        : dev.idem.core.UnlockOutcome.NOT_OWNER;
  }

  @Override
  public dev.idem.core.LockExtendOutcome extendLock(String name, String owner, Duration ttl) {
    return call(() -> idem.extendLock(name, owner, ttl)) == LockExtendOutcome.EXTENDED
        ? dev.idem.core.LockExtendOutcome.EXTENDED : dev.idem.core.LockExtendOutcome.NOT_OWNER;
  }

  @Override
  public void ping() {
    call(() -> idem.listRecords(RecordQuery.all().withLimit(1)));
  }
}
