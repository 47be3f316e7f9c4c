package dev.idem.spring.support;

import dev.idem.core.ClaimPolicy;
import dev.idem.core.OnUncertain;
import dev.idem.core.StoredResult;
import dev.idem.core.WorkEnd;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.StoreErrorPolicy;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.env.Environment;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.ast.Literal;
import org.springframework.expression.spel.standard.SpelExpression;
import java.util.function.Supplier;
import org.springframework.stereotype.Controller;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * One {@code @Idempotent} method, resolved once: its key space, expressions, policy and result
 * shape. Misconfigurations fail here, at the first call, naming the method.
 */
public final class IdempotentPlan {
  final Method method;
  final Class<?> targetClass;
  final String keySpace;
  /** "key space:", what every record key of this method starts with. */
  final String recordKeyPrefix;
  /** The scope's text when its expression is a constant ({@code "''"}, {@code "'shop'"}): evaluated once. */
  final String constantScope;
  final Expression key, scope, releaseWhen;
  final List<Expression> fingerprint;
  final Idempotent.FingerprintFrom fingerprintFrom;
  final boolean token, handler, transactional;
  final ClaimPolicy policy;
  final Duration wait;
  final StoreErrorPolicy onStoreError;
  final List<Class<? extends Throwable>> uncertainOn;
  final ResultShape shape;

  IdempotentPlan(Method method, Class<?> targetClass, Idempotent a, IdemProperties props, Environment env,
                 Expressions expressions, ResultShapes shapes) {
    this.method = method;
    this.targetClass = targetClass;
    String where = "@Idempotent on " + targetClass.getSimpleName() + "." + method.getName();
    Class<?> rt = method.getReturnType();
    if (CompletionStage.class.isAssignableFrom(rt) || Future.class.isAssignableFrom(rt)
        || rt.getName().startsWith("org.reactivestreams.") || rt.getName().startsWith("reactor.core."))
      throw new IllegalStateException("idem: " + where + ": asynchronous results are not supported; "
          + "put @Idempotent on the method that does the work synchronously");
    this.keySpace = a.keySpace().isEmpty() ? targetClass.getSimpleName() + "." + method.getName() : a.keySpace();
    if (!Keys.validKeySpace(keySpace))
      throw new IllegalStateException("idem: " + where + ": key space \"" + keySpace
          + "\" must be 1 to 64 of A-Z a-z 0-9 . _ -: name one with keySpace = \"...\"");
    this.recordKeyPrefix = keySpace + ":";
    this.token = a.token();
    if (token && !a.key().isEmpty())
      throw new IllegalStateException("idem: " + where + ": a token call takes its key from the token; drop key");
    this.key = expressions.parse(a.key(), where + ", key");
    this.scope = expressions.parse(a.scope(), where + ", scope");
    this.constantScope = constant(scope);
    String rule = a.releaseWhen().isEmpty() ? props.defaults().releaseWhen() : a.releaseWhen();
    this.releaseWhen = expressions.parse(rule, where + ", releaseWhen");
    this.fingerprint = new ArrayList<>();
    for (String f : a.fingerprint()) fingerprint.add(expressions.parse(f, where + ", fingerprint"));
    this.handler = AnnotatedElementUtils.hasAnnotation(targetClass, Controller.class);
    Idempotent.FingerprintFrom from = a.fingerprintFrom();
    if (from == Idempotent.FingerprintFrom.AUTO)
      from = handler ? Idempotent.FingerprintFrom.BODY : Idempotent.FingerprintFrom.ARGUMENTS;
    this.fingerprintFrom = from;
    this.transactional = a.transactional();
    IdemProperties.Defaults d = props.defaults();
    Duration lease = duration(env, a.lease(), d.lease(), where + ", lease");
    Duration retention = duration(env, a.retention(), d.retention(), where + ", retention");
    this.wait = duration(env, a.waitFor(), d.waitFor(), where + ", waitFor");
    OnUncertain on = switch (a.onUncertain()) {
      case DEFAULT -> d.onUncertain();
      case HOLD -> OnUncertain.HOLD;
      case RETRY -> OnUncertain.RETRY;
    };
    this.policy = new ClaimPolicy(lease, retention, true, on, StoredResult.UNCERTAIN_MARKER);
    this.onStoreError = a.onStoreError() == StoreErrorPolicy.DEFAULT ? d.onStoreError() : a.onStoreError();
    this.uncertainOn = List.of(a.uncertainOn());
    this.shape = shapes.forMethod(method, targetClass);
  }

  // The text of a literal expression; null for anything else (evaluated per call, refusals and all).
  private static String constant(Expression e) {
    if (!(e instanceof SpelExpression s) || !(s.getAST() instanceof Literal)) return null;
    Object v = e.getValue();
    if (v == null) return null;
    try {
      return Keys.text("scope " + e.getExpressionString(), v, dev.idem.spring.IdemProblem.SUBJECT_MISSING);
    } catch (RuntimeException refused) {
      return null;
    }
  }

  static Duration duration(Environment env, String text, Duration fallback, String where) {
    if (text == null || text.isBlank()) return fallback;
    String resolved = env == null ? text : env.resolveRequiredPlaceholders(text);
    try {
      return DurationStyle.detectAndParse(resolved.trim());
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException("idem: " + where + ": \"" + text + "\" is not a duration (30s, 10m, 24h, PT30S)", e);
    }
  }

  public String keySpace() {
    return keySpace;
  }

  public ClaimPolicy policy() {
    return policy;
  }

  /** What an exception from the method means for its claim: unknown for {@code uncertainOn}, else failed. */
  WorkEnd endFor(Throwable e) {
    for (Class<? extends Throwable> c : uncertainOn) {
      if (c.isInstance(e)) return WorkEnd.UNKNOWN;
    }
    return WorkEnd.FAILED;
  }

  /** What a returned value means: failed when its shape or {@code releaseWhen} says so, else succeeded. */
  WorkEnd endFor(Object value, Supplier<EvaluationContext> context) {
    if (shape.releases(value)) return WorkEnd.FAILED;
    if (releaseWhen == null) return WorkEnd.SUCCEEDED;
    EvaluationContext ctx = context.get();
    ctx.setVariable("result", value);
    Boolean release;
    try {
      release = releaseWhen.getValue(ctx, Boolean.class);
    } catch (RuntimeException e) {
      // The method ran: keeping its result is the at-most-once choice.
      org.apache.commons.logging.LogFactory.getLog(IdempotentPlan.class).error("idem: releaseWhen \""
          + releaseWhen.getExpressionString() + "\" of " + keySpace + " failed on the result, which is stored: " + e);
      return WorkEnd.SUCCEEDED;
    }
    return Boolean.TRUE.equals(release) ? WorkEnd.FAILED : WorkEnd.SUCCEEDED;
  }
}
