package dev.idem.spring.amqp;

import dev.idem.core.Attempt;
import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.Claim;
import dev.idem.core.ClaimPolicy;
import dev.idem.core.ClaimRunner;
import dev.idem.core.CommitArgs;
import dev.idem.core.Decisions;
import dev.idem.core.IdemException;
import dev.idem.core.OnUncertain;
import dev.idem.core.Settlement;
import dev.idem.core.StoreUnavailableException;
import dev.idem.core.StoredResult;
import dev.idem.core.WorkEnd;
import dev.idem.spring.IdemProblem;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdempotencyRefusedException;
import dev.idem.spring.IdempotentContext;
import dev.idem.spring.IdempotentListener;
import dev.idem.spring.StoreErrorPolicy;
import dev.idem.spring.support.Expressions;
import dev.idem.spring.support.IdemMetrics;
import dev.idem.spring.support.Keys;
import dev.idem.spring.support.ResultShape;
import dev.idem.spring.support.ResultShapes;
import dev.idem.spring.support.TransactionScope;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.amqp.AmqpRejectAndDontRequeueException;
import org.springframework.amqp.ImmediateRequeueAmqpException;
import org.springframework.amqp.core.Message;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.env.Environment;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.Expression;

/**
 * The aspect of {@code @IdempotentListener}: a message handled once per key within a scope
 * (docs/spring.md, "Consumers"). What each answer of the store does with the delivery:
 *
 * <ul>
 *   <li>acquired: the method runs, lease renewed; it returns → commit, ack; it throws → release, and
 *       the exception goes to the container (its retry and requeue settings decide).
 *   <li>replay: handled before (its consumer died before the ack, or the message was published
 *       twice): the first result is returned without running; ack.
 *   <li>in progress: another consumer runs it now. Waits here (the holder's retryAfter, polled with
 *       a backoff, woken when the holder is in this process) up to {@code in-progress-wait}; then
 *       it is replayed or run, or requeued ({@link ImmediateRequeueAmqpException}) once the wait is
 *       over: never a hot requeue loop.
 *   <li>taken over from a consumer that died mid-run: RETRY runs it again under a greater fence;
 *       HOLD marks it uncertain and rejects it without requeue (to the dead-letter exchange).
 *   <li>the store failed: requeued after a pause ({@code on-store-error: reject}), or run
 *       unprotected ({@code pass}).
 *   <li>no key: {@code missing-key: reject} (without requeue, logged) or {@code process}.
 * </ul>
 */
public final class IdempotentListenerInterceptor implements MethodInterceptor {
  private static final Log LOG = LogFactory.getLog(IdempotentListenerInterceptor.class);
  private static final Duration FIRST_BACKOFF = Duration.ofMillis(2), MAX_BACKOFF = Duration.ofMillis(200);

  private final ClaimRunner runner;
  private final IdemProperties props;
  private final Environment env;
  private final Expressions expressions;
  private final ObjectMapper mapper;
  private final IdemMetrics metrics;
  private final Supplier<TransactionScope> transactions;
  private final Map<Method, Plan> plans = new ConcurrentHashMap<>();

  public IdempotentListenerInterceptor(ClaimRunner runner, IdemProperties props, Environment env,
                                       Expressions expressions, ObjectMapper mapper, IdemMetrics metrics,
                                       Supplier<TransactionScope> transactions) {
    this.runner = runner;
    this.props = props;
    this.env = env;
    this.expressions = expressions;
    this.mapper = mapper;
    this.metrics = metrics;
    this.transactions = transactions;
  }

  private record Plan(String scope, Expression key, ClaimPolicy policy, Duration inProgressWait, boolean transactional,
                      ResultShape shape) {}

  private Plan plan(Method m, Class<?> targetClass) {
    return plans.computeIfAbsent(m, x -> {
      IdempotentListener a = AnnotatedElementUtils.findMergedAnnotation(m, IdempotentListener.class);
      String where = "@IdempotentListener on " + targetClass.getSimpleName() + "." + m.getName();
      String scope = a.scope().isEmpty() ? targetClass.getSimpleName() + "." + m.getName()
          : env.resolveRequiredPlaceholders(a.scope());
      IdemProperties.Defaults d = props.defaults();
      Duration lease = durationOf(a.lease(), d.lease(), where + ", lease");
      Duration retention = durationOf(a.retention(), d.retention(), where + ", retention");
      OnUncertain on = switch (a.onUncertain()) {
        case DEFAULT -> props.listener().onUncertain();
        case HOLD -> OnUncertain.HOLD;
        case RETRY -> OnUncertain.RETRY;
      };
      Duration wait = props.listener().inProgressWait() != null ? props.listener().inProgressWait() : lease;
      return new Plan(scope, expressions.parse(a.key(), where + ", key"),
          new ClaimPolicy(lease, retention, true, on, StoredResult.UNCERTAIN_MARKER), wait, a.transactional(),
          ResultShape.json(mapper, ResultShapes.returnType(mapper, m, targetClass)));
    });
  }

  private Duration durationOf(String text, Duration fallback, String where) {
    if (text == null || text.isBlank()) return fallback;
    try {
      return org.springframework.boot.convert.DurationStyle.detectAndParse(env.resolveRequiredPlaceholders(text).trim());
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException("idem: " + where + ": \"" + text + "\" is not a duration (30s, 10m, 24h)", e);
    }
  }

  @Override
  public Object invoke(MethodInvocation mi) throws Throwable {
    if (!props.enabled()) return mi.proceed();
    Object target = mi.getThis();
    Class<?> targetClass = target == null ? mi.getMethod().getDeclaringClass() : AopUtils.getTargetClass(target);
    Method method = AopUtils.getMostSpecificMethod(mi.getMethod(), targetClass);
    Plan plan = plan(method, targetClass);
    Message message = messageOf(mi.getArguments());
    String key = keyOf(plan, method, mi.getArguments(), target, message);
    if (key == null) {
      if (props.listener().missingKey() == IdemProperties.MissingKey.PROCESS) {
        metrics.message(plan.scope, "unprotected");
        return mi.proceed();
      }
      metrics.message(plan.scope, "missing_key");
      String what = plan.key == null ? "no message_id property (Spring AMQP sends none unless the message converter "
          + "creates ids: setCreateMessageIds(true))" : "no key: " + plan.key.getExpressionString() + " is null or empty";
      LOG.warn("idem: " + plan.scope + ": a message with " + what + " is rejected without requeue (idem.listener.missing-key=reject)");
      throw new AmqpRejectAndDontRequeueException("idem: " + plan.scope + ": the message has " + what);
    }
    TransactionScope tx = transactions.get();
    if (plan.transactional || tx != null && tx.active()) return inTransaction(plan, mi, key, tx);
    return claimed(plan, mi, key);
  }

  private static Message messageOf(Object[] args) {
    for (Object a : args) {
      if (a instanceof Message m) return m;
    }
    return CurrentMessage.get();
  }

  private String keyOf(Plan plan, Method method, Object[] args, Object target, Message message) {
    Object value;
    String what;
    if (plan.key == null) {
      value = message == null ? null : message.getMessageProperties().getMessageId();
      what = "message_id";
    } else {
      Map<String, String> headers = new java.util.HashMap<>();
      if (message != null)
        message.getMessageProperties().getHeaders().forEach((k, v) -> headers.put(k, v == null ? null : v.toString()));
      EvaluationContext ctx = expressions.context(method, args, target, null, null, headers);
      ctx.setVariable("message", message);
      ctx.setVariable("payload", payloadOf(args));
      try {
        value = plan.key.getValue(ctx);
      } catch (org.springframework.expression.EvaluationException e) {
        value = null;
      }
      what = plan.key.getExpressionString();
    }
    if (value == null || value instanceof CharSequence s && s.isEmpty()) return null;
    try {
      return Keys.fromValue(what, value);
    } catch (IdempotencyRefusedException e) {
      throw new AmqpRejectAndDontRequeueException("idem: " + plan.scope + ": " + e.getMessage());
    }
  }

  private static Object payloadOf(Object[] args) {
    for (Object a : args) {
      if (a != null && !(a instanceof Message) && !a.getClass().getName().startsWith("com.rabbitmq.client.")) return a;
    }
    return null;
  }

  private Object claimed(Plan plan, MethodInvocation mi, String key) throws Throwable {
    final long deadline = System.nanoTime() + plan.inProgressWait.toNanos();
    Duration backoff = FIRST_BACKOFF;
    for (;;) {
      ClaimRunner.Acquired a = runner.acquire(plan.scope, key, null, plan.policy, null);
      switch (a.step()) {
        case RUN:
          return run(plan, mi, a.claim().orElseThrow());
        case HOLD_UNCERTAIN:
          runner.settle(a.claim().orElseThrow(), Settlement.MARK_UNCERTAIN, null, java.util.Optional.empty());
          return uncertain(plan, key);
        case REPLAY: {
          StoredResult stored = StoredResult.decode(((BeginOutcome.Replay) a.begun()).result());
          metrics.message(plan.scope, "duplicate");
          return stored instanceof StoredResult.Json || stored instanceof StoredResult.Response
              ? plan.shape.decode(stored) : null;
        }
        case UNCERTAIN:
          return uncertain(plan, key);
        case MISMATCH:
          throw new AmqpRejectAndDontRequeueException("idem: " + plan.scope + ": key " + key + " belongs to another request");
        case NOT_APPLIED:
        case UNKNOWN:
          return storeFailed(plan, mi, a.failure());
        case BUSY:
        default:
          break;
      }
      Duration retryAfter = ((BeginOutcome.InProgress) a.begun()).retryAfter();
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        metrics.message(plan.scope, "in_progress");
        throw new ImmediateRequeueAmqpException("idem: " + plan.scope + ": message " + key
            + " is being handled by another consumer; requeued after waiting " + plan.inProgressWait);
      }
      long pause = Math.max(Math.min(Math.min(backoff.toNanos(), retryAfter.toNanos()), left), 1_000_000L);
      backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
      runner.awaitSettled(plan.scope, key, Duration.ofNanos(pause));
      if (Thread.currentThread().isInterrupted())
        throw new ImmediateRequeueAmqpException("idem: interrupted while message " + key + " was in progress elsewhere");
    }
  }

  private Object run(Plan plan, MethodInvocation mi, Claim claim) throws Throwable {
    ClaimRunner.Renewal renewal = runner.renew(claim, plan.policy);
    claim.started();
    Object value;
    IdempotentContext.Scope in = IdempotentContext.enter(new Attempt(claim.scope(), claim.key(), claim.fence(), claim.recovered()));
    try {
      value = mi.proceed();
    } catch (Throwable e) {
      renewal.close();
      runner.settle(claim, Decisions.settleFor(WorkEnd.FAILED, plan.policy.onUncertain(), claim.lost()), null,
          java.util.Optional.empty());
      metrics.message(plan.scope, "failed");
      throw e;
    } finally {
      in.close();
    }
    renewal.close();
    byte[] bytes;
    WorkEnd end = WorkEnd.SUCCEEDED;
    try {
      bytes = plan.shape.encode(value);
    } catch (RuntimeException e) {
      LOG.error("idem: the result of " + plan.scope + " cannot be stored; its outcome is settled as unknown", e);
      bytes = null;
      end = WorkEnd.UNKNOWN;
    }
    runner.settle(claim, Decisions.settleFor(end, plan.policy.onUncertain(), claim.lost()), bytes,
        java.util.Optional.empty());
    if (claim.lost())
      LOG.warn("idem: " + plan.scope + ": the claim of message " + claim.key() + " was lost while the listener ran");
    metrics.message(plan.scope, "processed");
    return value;
  }

  private Object uncertain(Plan plan, String key) {
    metrics.message(plan.scope, "uncertain");
    LOG.warn("idem: " + plan.scope + ": an earlier consumer of message " + key + " died mid-run and on-uncertain is HOLD: "
        + "rejected without requeue (dead-lettered); an operator decides");
    throw new AmqpRejectAndDontRequeueException("idem: " + plan.scope + ": the outcome of an earlier delivery of "
        + key + " is unknown");
  }

  private Object storeFailed(Plan plan, MethodInvocation mi, RuntimeException failure) throws Throwable {
    if (props.defaults().onStoreError() == StoreErrorPolicy.PASS) {
      metrics.message(plan.scope, "unprotected");
      LOG.warn("idem: the store failed (" + failure.getMessage() + "); " + plan.scope + " runs unprotected");
      return mi.proceed();
    }
    metrics.message(plan.scope, IdemProblem.STORE_UNAVAILABLE.outcome());
    // Requeued, but not at once: a store that is down would make it a hot loop.
    Duration pause = failure instanceof StoreUnavailableException s ? s.retryAfter() : Duration.ofSeconds(1);
    Thread.sleep(Math.min(pause.toMillis(), 5000));
    throw failure;
  }

  private Object inTransaction(Plan plan, MethodInvocation mi, String key, TransactionScope tx) throws Throwable {
    if (tx == null)
      throw new IllegalStateException("idem: @IdempotentListener(transactional = true) on " + plan.scope
          + " needs the JDBC store on the application's DataSource and a PlatformTransactionManager");
    return tx.run(() -> {
      BeginOutcome begun;
      try {
        begun = tx.begin(new BeginArgs(plan.scope, key, null, plan.policy.lease(), plan.policy.retention(), "tx"));
      } catch (IdemException e) {
        return storeFailed(plan, mi, e);
      }
      if (begun instanceof BeginOutcome.Replay r) {
        metrics.message(plan.scope, "duplicate");
        StoredResult stored = StoredResult.decode(r.result());
        if (stored instanceof StoredResult.Uncertain) return uncertain(plan, key);
        return stored instanceof StoredResult.Json || stored instanceof StoredResult.Response ? plan.shape.decode(stored) : null;
      }
      if (begun instanceof BeginOutcome.InProgress) {
        metrics.message(plan.scope, "in_progress");
        throw new ImmediateRequeueAmqpException("idem: " + plan.scope + ": message " + key + " is locked by another consumer's transaction");
      }
      if (!(begun instanceof BeginOutcome.Acquired a))
        throw new AmqpRejectAndDontRequeueException("idem: " + plan.scope + ": key " + key + " belongs to another request");
      Object value;
      IdempotentContext.Scope in = IdempotentContext.enter(new Attempt(plan.scope, key, a.fence(), a.recovered()));
      try {
        value = mi.proceed();
      } finally {
        in.close();
      }
      tx.commit(new CommitArgs(plan.scope, key, a.fence(), plan.shape.encode(value), plan.policy.retention()));
      metrics.message(plan.scope, "processed");
      return value;
    });
  }
}
