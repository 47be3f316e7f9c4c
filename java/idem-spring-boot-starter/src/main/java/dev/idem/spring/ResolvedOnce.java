package dev.idem.spring;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.beans.factory.ObjectProvider;

/**
 * An advisor's interceptor, taken from its provider at the first call and kept: the advisor is
 * made early (as advisors are) without making the store early, and a call does not pay a bean
 * factory lookup, which costs more than the protected call's own work.
 */
final class ResolvedOnce implements MethodInterceptor {
  private final ObjectProvider<? extends MethodInterceptor> provider;
  private volatile MethodInterceptor resolved;

  ResolvedOnce(ObjectProvider<? extends MethodInterceptor> provider) {
    this.provider = provider;
  }

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    MethodInterceptor i = resolved;
    if (i == null) resolved = i = provider.getObject();
    return i.invoke(invocation);
  }
}
