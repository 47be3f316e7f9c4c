package dev.idem.spring.support;

import java.lang.reflect.Method;
import java.security.Principal;
import java.util.Collections;
import java.util.Map;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;

/**
 * The SpEL of the annotations: parsed once per method, evaluated per call over the method's
 * arguments (by name, {@code #p0}, {@code #args}), {@code #headers}, {@code #request}, {@code
 * #principal}, {@code #result} and beans ({@code @name}).
 */
public final class Expressions {
  private final SpelExpressionParser parser = new SpelExpressionParser();
  private final ParameterNameDiscoverer names = new DefaultParameterNameDiscoverer();
  private final BeanFactoryResolver beans;

  public Expressions(BeanFactory beanFactory) {
    this.beans = beanFactory == null ? null : new BeanFactoryResolver(beanFactory);
  }

  /** The parsed expression, or null for "". @throws IllegalStateException naming where it is */
  public Expression parse(String text, String where) {
    if (text == null || text.isBlank()) return null;
    try {
      return parser.parseExpression(text);
    } catch (ParseException e) {
      throw new IllegalStateException("idem: " + where + ": \"" + text + "\" is not a SpEL expression: " + e.getMessage(), e);
    }
  }

  /** The root object of every expression: the call. */
  public record Call(Method method, Object[] args, Object target) {}

  /** A context for one call. */
  public EvaluationContext context(Method method, Object[] args, Object target, RequestView request,
                                   Principal principal, Map<String, String> headers) {
    MethodBasedEvaluationContext c = new MethodBasedEvaluationContext(new Call(method, args, target), method, args, names);
    if (beans != null) c.setBeanResolver(beans);
    c.setVariable("args", args);
    c.setVariable("request", request == null ? null : request.nativeRequest());
    c.setVariable("principal", principal);
    c.setVariable("headers", headers != null ? headers : request != null ? request.headers() : Collections.emptyMap());
    return c;
  }

  /** A context with no method: the token endpoint's and the page helper's scope. */
  public EvaluationContext plain(RequestView request, Principal principal) {
    StandardEvaluationContext c = new StandardEvaluationContext();
    if (beans != null) c.setBeanResolver(beans);
    c.setVariable("request", request == null ? null : request.nativeRequest());
    c.setVariable("principal", principal);
    c.setVariable("headers", request != null ? request.headers() : Collections.emptyMap());
    return c;
  }
}
