package dev.idem.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
 * {"idem_uncertain": "<mark>"}}, read back as the mark); anything else is refused. A JSON text is
 * committed as written and read back byte for byte. A begin answers JSON null for a committed null
 * and for the gateway's own uncertain and not-stored records alike, so such a replay reads the
 * record ({@code GET /v1/records}) to tell them apart: one more call, for null results only.
 * Fingerprints travel as text (UTF-8). {@link CommitArgs#overUncertain()} and {@link
 * ReleaseArgs#restoreToken()} are not passed ({@link StoreTraits#overUncertain()} and {@link
 * StoreTraits#tokenRestoreOnRelease()} are false); replays name no fence and no expiry (but for
 * null results); {@link #get} shows no fingerprint and no owner.
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
    } catch (ProtocolException | Fields.Malformed e) {
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

  /** The stored form of a result the control API answered, from its text as committed. */
  static byte[] stored(String json) {
    JsonNode v = ExactJson.parse(json);
    if (v.isObject() && v.size() == 1 && v.get(UNCERTAIN) != null && v.get(UNCERTAIN).isTextual())
      return ("U" + v.get(UNCERTAIN).textValue()).getBytes(StandardCharsets.UTF_8);
    return StoredResult.encode(new StoredResult.Json(json));
  }

  /** The JSON text a stored form is committed as. */
  static String committed(byte[] result) {
    StoredResult r = StoredResult.decode(result);
    if (r instanceof StoredResult.Json j) return j.text();
    if (r instanceof StoredResult.Uncertain u) {
      byte[] mark = u.mark().encode(StoredResult.UNCERTAIN_MARKER);
      ObjectNode o = ExactJson.object();
      o.put(UNCERTAIN, new String(mark, 1, mark.length - 1, StandardCharsets.UTF_8));
      return ExactJson.write(o);
    }
    throw new IllegalArgumentException("the control API stores JSON results only, not " + r.getClass().getSimpleName());
  }

  @Override
  public dev.idem.core.BeginOutcome begin(BeginArgs a) {
    BeginOutcome b = call(() -> idem.begin(a.scope(), a.key(), text(a.fingerprint()), a.lease(), a.retention(),
        a.owner().isEmpty() ? null : a.owner()));
    if (b instanceof BeginOutcome.Acquired x) return new dev.idem.core.BeginOutcome.Acquired(x.fence(), x.recovered(), x.previousFence());
    if (b instanceof BeginOutcome.Replay r) {
      if (!r.result().isNull()) return new dev.idem.core.BeginOutcome.Replay(0, stored(r.resultJson()), Duration.ZERO);
      // A begin answers null for a committed JSON null and for the gateway's uncertain and
      // not-stored records alike: the record says which.
      IdemRecord held = get(a.scope(), a.key()).filter(x -> x.state() == RecordState.DONE)
          .orElseThrow(() -> new dev.idem.core.NotAppliedException("control API: the record of a replay changed before"
              + " it could be read; nothing was applied, begin again"));
      return new dev.idem.core.BeginOutcome.Replay(held.fence(), held.result(), Duration.ZERO);
    }
    if (b instanceof BeginOutcome.InProgress p) return new dev.idem.core.BeginOutcome.InProgress(p.retryAfter());
    return new dev.idem.core.BeginOutcome.Mismatch();
  }

  @Override
  public dev.idem.core.CommitOutcome commit(CommitArgs a) {
    if (a.result().length > maxResultBytes())
      throw new IllegalArgumentException("the result is " + a.result().length + " bytes, more than the "
          + maxResultBytes() + " bytes the control API takes in one commit");
    String result = committed(a.result());
    CommitOutcome c = call(() -> idem.commitJson(a.scope(), a.key(), a.fence(), result, a.retention()));
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
      if (kind.equals("json")) result = stored(s.valueJson().orElse("null"));
      else if (kind.equals("uncertain")) result = StoredResult.encode(new StoredResult.Uncertain(uncertainMark(s.json())));
      else if (kind.equals("not_stored")) result = StoredResult.encode(new StoredResult.NotStored(s.responseStatus().orElse(0)));
      else result = StoredResult.encode(new StoredResult.Response(s.responseStatus().orElse(0), List.of(), new byte[0]));
    }
    return new IdemRecord(s.scope(), s.key(), s.done() ? RecordState.DONE : RecordState.PENDING, s.fence(), null,
        s.leaseUntil(), s.expiresAt(), result, "");
  }

  // The mark the records API shows: {"uncertain": {"fence": F, "instance": "...", "at": "<RFC 3339>"}}.
  private static UncertainMark uncertainMark(JsonNode record) {
    JsonNode m = record.get("uncertain");
    if (m == null || !m.isObject()) return new UncertainMark(0, "", 0);
    long at = Fields.optional(m, "at").map(t -> java.time.Instant.parse(Fields.asText(t, "at")).toEpochMilli()).orElse(0L);
    return new UncertainMark(Fields.longValue(m, "fence"), Fields.optional(m, "instance").map(i -> Fields.asText(i, "instance"))
        .orElse(""), at);
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

  /**
   * Reads one record (absent or not): the listener, the token and the store all answer. One
   * record's read, not a listing, so that a token of the {@code control} role alone will do
   * (docs/admin.md, "Tokens and roles").
   */
  @Override
  public void ping() {
    call(() -> idem.getRecord("", "idem-ping"));
  }
}
