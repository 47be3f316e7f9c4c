package dev.idem.spring;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.ClaimRunner;
import dev.idem.core.IdemStore;
import dev.idem.spring.store.IdemStoreOpener;
import dev.idem.spring.support.Expressions;
import dev.idem.spring.support.Fingerprints;
import dev.idem.spring.support.IdemMetrics;
import dev.idem.spring.support.IdempotentInterceptor;
import dev.idem.spring.support.ObservedStore;
import dev.idem.spring.support.RequestView;
import dev.idem.spring.support.ResultShapes;
import dev.idem.spring.support.Subject;
import dev.idem.spring.support.TransactionScope;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Supplier;
import org.springframework.aop.Advisor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

/**
 * idem for a Spring Boot application (docs/spring.md): the store (from {@code idem.store.*}, the
 * application's Redis or DataSource, or the control API), the claim runner, and the aspect of
 * {@code @Idempotent}. Every bean gives way to one of the application's own.
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.autoconfigure.jackson.JacksonAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration"})
@EnableConfigurationProperties(IdemProperties.class)
@Import({IdemStoreConfiguration.RedisUri.class, IdemStoreConfiguration.ApplicationRedis.class,
    IdemStoreConfiguration.ApplicationJdbc.class, IdemStoreConfiguration.ControlApi.class})
public class IdemAutoConfiguration {

  /**
   * The order of the {@code @Idempotent} aspect: before {@code @Transactional} (whose default is
   * the lowest precedence), so that a result is committed to the store only after the method's
   * own transaction committed.
   */
  public static final int ORDER = Ordered.HIGHEST_PRECEDENCE + 1000;

  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  IdemStore idemStore(IdemProperties props, List<IdemStoreOpener> openers, ObjectProvider<IdemMetrics> metrics) {
    List<IdemStoreOpener> all = new ArrayList<>(openers);
    all.add(IdemStoreConfiguration.memory());
    all.sort(Comparator.comparingInt(IdemStoreOpener::priority));
    IdemProperties.StoreType type = props.store().type();
    // auto: the first available by priority, never the memory store; else the first of the type.
    IdemStoreOpener chosen = all.stream()
        .filter(o -> type == IdemProperties.StoreType.AUTO ? o.type() != IdemProperties.StoreType.MEMORY : o.type() == type)
        .filter(IdemStoreOpener::available).findFirst().orElse(null);
    if (chosen == null) {
      StringBuilder why = new StringBuilder("idem: no store for idem.store.type=" + type.name().toLowerCase()
          + ". Give it one of: idem.store.type=memory (one process only)");
      for (IdemStoreOpener o : all) {
        if (o.type() != IdemProperties.StoreType.MEMORY && (type == IdemProperties.StoreType.AUTO || o.type() == type))
          why.append("; ").append(o.needs());
      }
      if (all.stream().noneMatch(o -> o.type() != IdemProperties.StoreType.MEMORY))
        why.append("; add idem-redis, idem-jdbc or idem-client beside the starter");
      throw new IllegalStateException(why.toString());
    }
    return new ObservedStore(chosen.open(), metrics.getIfAvailable(IdemMetrics::none));
  }

  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  ClaimRunner idemClaimRunner(IdemStore store, IdemProperties props, ObjectProvider<IdemMetrics> metrics) {
    IdemMetrics m = metrics.getIfAvailable(IdemMetrics::none);
    IdemProperties.Runner r = props.runner();
    return new ClaimRunner(store, new ClaimRunner.Limits(r.maxSettles(), r.maxPendingBytes().toBytes(), r.threads()),
        new ClaimRunner.Hooks((scope, key) -> {}, m::conflict));
  }

  @Bean
  @ConditionalOnMissingBean
  Expressions idemExpressions(BeanFactory beanFactory) {
    return new Expressions(beanFactory);
  }

  @Bean
  @ConditionalOnMissingBean
  IdemTokens idemTokens(ClaimRunner runner, IdemProperties props, ObjectProvider<RequestViews> requests,
                        ObjectProvider<IdemMetrics> metrics) {
    return new IdemTokens(runner, Subject.parse(props.web().subject()), requests.getIfAvailable(RequestViews::none),
        props.tokens().ttl(), metrics.getIfAvailable(IdemMetrics::none));
  }

  @Bean
  @ConditionalOnMissingBean
  IdempotentInterceptor idempotentInterceptor(ClaimRunner runner, IdemProperties props, Environment env,
                                              Expressions expressions, ObjectProvider<ObjectMapper> mapper,
                                              ObjectProvider<ResultShapes> shapes, ObjectProvider<RequestViews> requests,
                                              ObjectProvider<IdemMetrics> metrics,
                                              ObjectProvider<Supplier<TransactionScope>> transactions) {
    ObjectMapper m = mapper.getIfAvailable(ObjectMapper::new);
    return new IdempotentInterceptor(runner, props, env, expressions, shapes.getIfAvailable(() -> ResultShapes.json(m)),
        new Fingerprints(m), requests.getIfAvailable(RequestViews::none), metrics.getIfAvailable(IdemMetrics::none),
        transactions.getIfAvailable(() -> () -> null));
  }

  /**
   * The advisor of {@code @Idempotent} methods. Static and holding only a provider, so that it is
   * made early (as advisors are) without making the store early.
   */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static Advisor idempotentAdvisor(ObjectProvider<IdempotentInterceptor> interceptor) {
    DefaultPointcutAdvisor advisor = new DefaultPointcutAdvisor(
        new AnnotationMatchingPointcut(null, Idempotent.class, true), new ResolvedOnce(interceptor));
    advisor.setOrder(ORDER);
    return advisor;
  }

  /** The current HTTP request, when the web part is there. */
  @FunctionalInterface
  public interface RequestViews extends Supplier<RequestView> {
    static RequestViews none() {
      return () -> null;
    }
  }
}
