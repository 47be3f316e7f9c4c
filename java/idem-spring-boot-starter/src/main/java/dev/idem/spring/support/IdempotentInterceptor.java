package dev.idem.spring.support;

import dev.idem.core.Attempt;
import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.BeginStep;
import dev.idem.core.Claim;
import dev.idem.core.ClaimRunner;
import dev.idem.core.CommitArgs;
import dev.idem.core.ConsumeOutcome;
import dev.idem.core.Decisions;
import dev.idem.core.IdemException;
import dev.idem.core.IdemStore;
import dev.idem.core.InProgressException;
import dev.idem.core.KeyReusedException;
import dev.idem.core.OnUncertain;
import dev.idem.core.Settlement;
import dev.idem.core.StoreProtocolException;
import dev.idem.core.StoredResult;
import dev.idem.core.TokenRestore;
import dev.idem.core.UncertainKeyException;
import dev.idem.core.UncertainMark;
import dev.idem.core.WorkEnd;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdemProblem;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdempotentContext;
import dev.idem.spring.IdempotencyRefusedException;
import dev.idem.spring.StoreErrorPolicy;
import java.lang.reflect.Method;
import java.security.Principal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.env.Environment;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.Expression;

/**
 * The aspect of {@code @Idempotent}: one protected call, in the order of the articles' checklist
 * (docs/spring.md, "What a call does"): validate (scope, key, fingerprint; nothing is claimed for a
 * call refused here) → claim and read the state in one store step (the claim runner's acquire) →
 * consume the one-time token → run the method while the lease is renewed → write: commit the
 * result, or release the claim (re-arming the token), or hold an unknown outcome as uncertain.
 *
 * <p>Refusals are exceptions the web part answers as {@code ProblemDetail}s ({@link
 * dev.idem.spring.IdemProblems}): {@link IdempotencyRefusedException}, the engine's {@link
 * InProgressException}, {@link KeyReusedException}, {@link UncertainKeyException}, and the store's
 * {@link IdemException} under {@code on-store-error: reject}.
 *
 * <p>Thread safety: safe for concurrent use; plans are built once per method.
 */
public final class IdempotentInterceptor implements MethodInterceptor {
  private static final Log LOG = LogFactory.getLog(IdempotentInterceptor.class);
  private static final Duration FIRST_BACKOFF = Duration.ofMillis(2), MAX_BACKOFF = Duration.ofMillis(200);
  public static final String REPLAYED_HEADER = "Idempotent-Replayed";
  public static final String STATUS_HEADER = "Idempotency-Status";

  private final ClaimRunner runner;
  private final IdemStore store;
  private final IdemProperties props;
  private final Environment env;
  private final Expressions expressions;
  private final ResultShapes shapes;
  private final Fingerprints fingerprints;
  private final Subject subject;
  private final Supplier<RequestView> requests;
  private final IdemMetrics metrics;
  private final Supplier<TransactionScope> transactions;
  private final Map<Method, IdempotentPlan> plans = new ConcurrentHashMap<>();
  // By the invoked method, for the target class it was resolved for: the hot path's one lookup.
  private final Map<Method, IdempotentPlan> byInvoked = new ConcurrentHashMap<>();

  public IdempotentInterceptor(ClaimRunner runner, IdemProperties props, Environment env, Expressions expressions,
                               ResultShapes shapes, Fingerprints fingerprints, Supplier<RequestView> requests,
                               IdemMetrics metrics, Supplier<TransactionScope> transactions) {
    this.runner = runner;
    this.store = runner.store();
    this.props = props;
    this.env = env;
    this.expressions = expressions;
    this.shapes = shapes;
    this.fingerprints = fingerprints;
    this.subject = Subject.parse(props.web().subject());
    this.requests = requests;
    this.metrics = metrics;
    this.transactions = transactions;
  }

  /** The plan of a method (built at its first call). */
  public IdempotentPlan plan(Method method, Class<?> targetClass) {
    return plans.computeIfAbsent(method, m -> {
      Idempotent a = AnnotatedElementUtils.findMergedAnnotation(m, Idempotent.class);
      if (a == null) throw new IllegalStateException("idem: " + m + " has no @Idempotent");
      return new IdempotentPlan(m, targetClass, a, props, env, expressions, shapes);
    });
  }

  @Override
  public Object invoke(MethodInvocation mi) throws Throwable {
    if (!props.enabled()) return mi.proceed();
    Object target = mi.getThis();
    Class<?> targetClass = target == null ? mi.getMethod().getDeclaringClass() : AopUtils.getTargetClass(target);
    IdempotentPlan plan = byInvoked.get(mi.getMethod());
    if (plan == null || plan.targetClass != targetClass) {
      plan = plan(AopUtils.getMostSpecificMethod(mi.getMethod(), targetClass), targetClass);
      byInvoked.put(mi.getMethod(), plan);
    }
    metrics.inflight(1);
    try {
      return call(plan, mi, plan.method, target);
    } finally {
      metrics.inflight(-1);
    }
  }

  /** One call's identity: who, which record, which request, and the token when there is one. */
  private record Identity(String scope, String key, String recordKey, byte[] fingerprint, String token) {}

  /**
   * The SpEL context of one call, made at its first use: a call whose expressions are all
   * constant (or absent) never makes one.
   */
  private final class CallContext implements Supplier<EvaluationContext> {
    private final Method method;
    private final Object[] args;
    private final Object target;
    private final RequestView request;
    private boolean principalRead;
    private Principal principal;
    private EvaluationContext ctx;

    CallContext(Method method, Object[] args, Object target, RequestView request) {
      this.method = method;
      this.args = args;
      this.target = target;
      this.request = request;
    }

    Principal principal() {
      if (!principalRead) {
        principal = Principals.current(request);
        principalRead = true;
      }
      return principal;
    }

    @Override
    public EvaluationContext get() {
      if (ctx == null) ctx = expressions.context(method, args, target, request, principal(), null);
      return ctx;
    }
  }

  private Object call(IdempotentPlan plan, MethodInvocation mi, Method method, Object target) throws Throwable {
    RequestView request = requests.get();
    CallContext ctx = new CallContext(method, mi.getArguments(), target, request);
    Identity id;
    try {
      id = identify(plan, mi.getArguments(), ctx, request);
    } catch (IdempotencyRefusedException e) {
      metrics.request(plan.keySpace, e.problem().outcome());
      throw e;
    }
    if (plan.transactional) return inTransaction(plan, mi, ctx, request, id);
    TransactionScope tx = transactions.get();
    if (tx != null && tx.active()) return inTransaction(plan, mi, ctx, request, id);
    return claimed(plan, mi, ctx, request, id);
  }

  // ---- validate ----------------------------------------------------------------------------

  private Identity identify(IdempotentPlan plan, Object[] args, CallContext ctx, RequestView request) {
    String scope = plan.constantScope != null ? plan.constantScope
        : plan.scope == null ? subject.scope(request, Principals.name(ctx.principal()))
        : Keys.text("scope " + plan.scope.getExpressionString(), valueOf(plan.scope, ctx.get()), IdemProblem.SUBJECT_MISSING);
    String key, token = null;
    if (plan.token) {
      String header = props.web().tokenHeader();
      token = request == null ? null : request.header(header);
      if (token == null || token.isEmpty()) token = request == null ? null : request.parameter(props.web().tokenParameter());
      if (token == null || token.isEmpty())
        throw new IdempotencyRefusedException(IdemProblem.TOKEN_MISSING, "the " + header + " header is missing");
      if (token.length() > Keys.MAX_KEY || !Keys.encode(token).equals(token))
        throw new IdempotencyRefusedException(IdemProblem.TOKEN_INVALID,
            "the " + header + " is unknown, expired or already used");
      key = token;
    } else if (plan.key != null) {
      key = Keys.fromValue(plan.key.getExpressionString(), valueOf(plan.key, ctx.get()));
    } else {
      String header = props.web().keyHeader();
      if (request == null)
        throw new IdempotencyRefusedException(IdemProblem.KEY_MISSING, "no HTTP request to read the " + header
            + " header from: name the key with @Idempotent(key = \"...\")");
      key = Keys.fromClient(header, request.header(header));
    }
    byte[] fingerprint = fingerprint(plan, args, ctx, request);
    return new Identity(scope, key, plan.recordKeyPrefix + key, fingerprint, token);
  }

  private static Object valueOf(Expression e, EvaluationContext ctx) {
    try {
      return e.getValue(ctx);
    } catch (org.springframework.expression.EvaluationException x) {
      throw new IdempotencyRefusedException(IdemProblem.KEY_MISSING, e.getExpressionString() + ": " + x.getMessage());
    }
  }

  private byte[] fingerprint(IdempotentPlan plan, Object[] args, CallContext ctx, RequestView request) {
    if (!plan.fingerprint.isEmpty()) {
      List<Object> values = new ArrayList<>(plan.fingerprint.size());
      for (Expression e : plan.fingerprint) values.add(e.getValue(ctx.get()));
      return fingerprints.ofValues(values);
    }
    return switch (plan.fingerprintFrom) {
      case NONE -> new byte[0];
      case BODY -> request != null ? request.fingerprint() : fingerprints.ofArguments(args);
      default -> fingerprints.ofArguments(args);
    };
  }

  // ---- claim, run, settle ------------------------------------------------------------------

  private Object claimed(IdempotentPlan plan, MethodInvocation mi, Supplier<EvaluationContext> ctx, RequestView request,
                         Identity id) throws Throwable {
    final long deadline = System.nanoTime() + plan.wait.toNanos();
    Duration backoff = FIRST_BACKOFF;
    boolean waited = false;
    for (;;) {
      ClaimRunner.Acquired a = runner.acquire(id.scope, id.recordKey, id.fingerprint, plan.policy, null);
      switch (a.step()) {
        case RUN:
          return run(plan, mi, ctx, request, id, a.claim().orElseThrow());
        case HOLD_UNCERTAIN: {
          Claim c = a.claim().orElseThrow();
          runner.settle(c, Settlement.MARK_UNCERTAIN, null, Optional.empty());
          metrics.request(plan.keySpace, IdemProblem.OUTCOME_UNCERTAIN.outcome());
          throw new UncertainKeyException(new UncertainMark(c.previousFence(), "", 0));
        }
        case REPLAY:
        case UNCERTAIN:
          return replay(plan, request, ((BeginOutcome.Replay) a.begun()).result(), waited);
        case MISMATCH:
          metrics.request(plan.keySpace, IdemProblem.KEY_REUSED.outcome());
          throw new KeyReusedException();
        case NOT_APPLIED:
        case UNKNOWN:
          return storeFailed(plan, mi, request, a.failure());
        case BUSY:
        default:
          break;
      }
      Duration retryAfter = ((BeginOutcome.InProgress) a.begun()).retryAfter();
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        metrics.request(plan.keySpace, IdemProblem.IN_PROGRESS.outcome());
        throw new InProgressException(retryAfter);
      }
      long pause = Math.max(Math.min(Math.min(backoff.toNanos(), retryAfter.toNanos()), left), 1_000_000L);
      backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
      runner.awaitSettled(id.scope, id.recordKey, Duration.ofNanos(pause));
      waited = true;
      if (Thread.currentThread().isInterrupted()) {
        metrics.request(plan.keySpace, IdemProblem.IN_PROGRESS.outcome());
        throw new InProgressException(retryAfter);
      }
    }
  }

  private Object run(IdempotentPlan plan, MethodInvocation mi, Supplier<EvaluationContext> ctx, RequestView request,
                     Identity id, Claim claim) throws Throwable {
    Optional<TokenRestore> restore = Optional.empty();
    if (id.token != null) {
      restore = Optional.of(new TokenRestore(id.token, props.tokens().ttl()));
      if (!claim.recovered()) {
        ConsumeOutcome consumed;
        try {
          consumed = store.consumeToken(id.scope, id.token);
          runner.storeAnswered();
        } catch (IdemException e) {
          runner.settle(claim, Settlement.RELEASE, null, Optional.empty());
          return storeFailed(plan, mi, request, e);
        }
        if (consumed == ConsumeOutcome.INVALID) {
          // The claim was ours only while the token was checked: given back, the token untouched.
          runner.settle(claim, Settlement.RELEASE, null, Optional.empty());
          metrics.request(plan.keySpace, IdemProblem.TOKEN_INVALID.outcome());
          throw new IdempotencyRefusedException(IdemProblem.TOKEN_INVALID,
              "the " + props.web().tokenHeader() + " is unknown, expired or already used");
        }
      }
    }
    ClaimRunner.Renewal renewal = runner.renew(claim, plan.policy);
    claim.started();
    Object value;
    IdempotentContext.Scope in = IdempotentContext.enter(new Attempt(claim.scope(), claim.key(), claim.fence(), claim.recovered()));
    try {
      value = mi.proceed();
    } catch (Throwable e) {
      renewal.close();
      Settlement how = Decisions.settleFor(plan.endFor(e), plan.policy.onUncertain(), claim.lost());
      runner.settle(claim, how, null, how == Settlement.RELEASE ? restore : Optional.empty());
      metrics.request(plan.keySpace, "forwarded");
      throw e;
    } finally {
      in.close();
    }
    renewal.close();
    WorkEnd end = plan.endFor(value, ctx);
    byte[] bytes = null;
    if (end == WorkEnd.SUCCEEDED) {
      try {
        bytes = plan.shape.encode(value);
      } catch (RuntimeException e) {
        // The method took effect and its result cannot be kept: an unknown outcome.
        LOG.error("idem: the result of " + plan.keySpace + " cannot be stored; its outcome is settled as unknown", e);
        end = WorkEnd.UNKNOWN;
      }
    }
    Settlement how = Decisions.settleFor(end, plan.policy.onUncertain(), claim.lost());
    ClaimRunner.SettleResult s = runner.settle(claim, how, bytes, how == Settlement.RELEASE ? restore : Optional.empty());
    if (s.kind() == ClaimRunner.SettleKind.FENCED && how != Settlement.NONE || claim.lost())
      LOG.warn("idem: the claim of " + plan.keySpace + " (fence " + claim.fence() + ") was lost while the method ran: "
          + "its result was not stored; the newer holder's outcome stands");
    metrics.request(plan.keySpace, "forwarded");
    return value;
  }

  private Object replay(IdempotentPlan plan, RequestView request, byte[] bytes, boolean waited) {
    StoredResult stored;
    try {
      stored = StoredResult.decode(bytes);
    } catch (IllegalArgumentException e) {
      throw new StoreProtocolException("idem: the record of " + plan.keySpace + " holds a result that is not idem's stored form ("
          + e.getMessage() + ")", e);
    }
    if (stored instanceof StoredResult.Uncertain u) {
      metrics.request(plan.keySpace, IdemProblem.OUTCOME_UNCERTAIN.outcome());
      throw new UncertainKeyException(u.mark());
    }
    if (stored instanceof StoredResult.NotStored n) {
      metrics.request(plan.keySpace, IdemProblem.RESULT_NOT_STORED.outcome());
      throw new IdempotencyRefusedException(IdemProblem.RESULT_NOT_STORED,
          "the first response (status " + n.status() + ") was too large to store");
    }
    Object value = plan.shape.decode(stored);
    if (request != null) request.responseHeader(REPLAYED_HEADER, "true");
    metrics.request(plan.keySpace, waited ? "waited" : "replayed");
    return value;
  }

  private Object storeFailed(IdempotentPlan plan, MethodInvocation mi, RequestView request, RuntimeException failure)
      throws Throwable {
    if (plan.onStoreError != StoreErrorPolicy.PASS) {
      metrics.request(plan.keySpace, IdemProblem.STORE_UNAVAILABLE.outcome());
      throw failure;
    }
    LOG.warn("idem: the store failed (" + failure.getMessage() + "); " + plan.keySpace + " runs unprotected (on-store-error: pass)");
    if (request != null) request.responseHeader(STATUS_HEADER, "unprotected");
    metrics.request(plan.keySpace, "unprotected");
    return mi.proceed();
  }

  // ---- the key in the caller's transaction --------------------------------------------------

  private Object inTransaction(IdempotentPlan plan, MethodInvocation mi, Supplier<EvaluationContext> ctx, RequestView request,
                               Identity id) throws Throwable {
    TransactionScope tx = transactions.get();
    if (tx == null)
      throw new IllegalStateException("idem: @Idempotent(transactional = true) on " + plan.keySpace
          + " needs the JDBC store on the application's DataSource and a PlatformTransactionManager (idem-jdbc, spring-jdbc)");
    Object out = tx.run(() -> {
      BeginArgs args = new BeginArgs(id.scope, id.recordKey, id.fingerprint, plan.policy.lease(),
          plan.policy.retention(), "tx");
      BeginOutcome begun;
      try {
        begun = tx.begin(args);
      } catch (IdemException e) {
        return storeFailed(plan, mi, request, e);
      }
      if (begun instanceof BeginOutcome.Replay r) return replay(plan, request, r.result(), false);
      if (begun instanceof BeginOutcome.Mismatch) {
        metrics.request(plan.keySpace, IdemProblem.KEY_REUSED.outcome());
        throw new KeyReusedException();
      }
      if (begun instanceof BeginOutcome.InProgress p) {
        metrics.request(plan.keySpace, IdemProblem.IN_PROGRESS.outcome());
        throw new InProgressException(p.retryAfter());
      }
      BeginOutcome.Acquired a = (BeginOutcome.Acquired) begun;
      if (a.recovered() && plan.policy.onUncertain() == OnUncertain.HOLD) {
        // A claim of the non-transactional path died mid-run: its outcome is unknown.
        UncertainMark mark = new UncertainMark(a.previousFence(), "transactional", System.currentTimeMillis());
        tx.commit(new CommitArgs(id.scope, id.recordKey, a.fence(), StoredResult.encode(new StoredResult.Uncertain(mark)),
            plan.policy.retention()));
        metrics.request(plan.keySpace, IdemProblem.OUTCOME_UNCERTAIN.outcome());
        return new Uncertain(mark);
      }
      if (id.token != null && !a.recovered()) {
        ConsumeOutcome consumed = store.consumeToken(id.scope, id.token);
        if (consumed == ConsumeOutcome.INVALID) {
          tx.rollbackOnly();
          metrics.request(plan.keySpace, IdemProblem.TOKEN_INVALID.outcome());
          throw new IdempotencyRefusedException(IdemProblem.TOKEN_INVALID,
              "the " + props.web().tokenHeader() + " is unknown, expired or already used");
        }
        Duration ttl = props.tokens().ttl();
        String scope = id.scope, token = id.token;
        tx.onRollback(() -> {
          try {
            store.restoreToken(scope, token, ttl);
          } catch (RuntimeException e) {
            LOG.warn("idem: the token of a rolled-back call could not be re-armed: " + e.getMessage());
          }
        });
      }
      metrics.request(plan.keySpace, "forwarded");
      Object value;
      IdempotentContext.Scope in = IdempotentContext.enter(new Attempt(id.scope, id.recordKey, a.fence(), a.recovered()));
      try {
        value = mi.proceed();  // an exception rolls the transaction, and the claim, back
      } finally {
        in.close();
      }
      WorkEnd end = plan.endFor(value, ctx);
      if (end != WorkEnd.SUCCEEDED) {
        tx.rollbackOnly();
        return value;
      }
      tx.commit(new CommitArgs(id.scope, id.recordKey, a.fence(), plan.shape.encode(value), plan.policy.retention()));
      return value;
    });
    if (out instanceof Uncertain u) throw new UncertainKeyException(u.mark());
    return out;
  }

  // A HOLD mark is committed with the transaction before the caller hears of it.
  private record Uncertain(UncertainMark mark) {}
}
