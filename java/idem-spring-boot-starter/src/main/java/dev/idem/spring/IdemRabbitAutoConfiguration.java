package dev.idem.spring;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.ClaimRunner;
import dev.idem.spring.amqp.IdempotentListenerInterceptor;
import dev.idem.spring.amqp.ListenerAdvicePostProcessor;
import dev.idem.spring.support.Expressions;
import dev.idem.spring.support.IdemMetrics;
import dev.idem.spring.support.TransactionScope;
import java.util.function.Supplier;
import org.springframework.amqp.rabbit.config.AbstractRabbitListenerContainerFactory;
import org.springframework.aop.Advisor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;

/** {@code @IdempotentListener} on Spring AMQP listeners (docs/spring.md, "Consumers"). */
@AutoConfiguration(after = IdemAutoConfiguration.class)
@ConditionalOnClass(AbstractRabbitListenerContainerFactory.class)
public class IdemRabbitAutoConfiguration {

  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static ListenerAdvicePostProcessor idemListenerAdvicePostProcessor() {
    return new ListenerAdvicePostProcessor();
  }

  @Bean
  @ConditionalOnMissingBean
  IdempotentListenerInterceptor idempotentListenerInterceptor(ClaimRunner runner, IdemProperties props, Environment env,
                                                              Expressions expressions, ObjectProvider<ObjectMapper> mapper,
                                                              ObjectProvider<IdemMetrics> metrics,
                                                              ObjectProvider<Supplier<TransactionScope>> transactions) {
    return new IdempotentListenerInterceptor(runner, props, env, expressions, mapper.getIfAvailable(ObjectMapper::new),
        metrics.getIfAvailable(IdemMetrics::none), transactions.getIfAvailable(() -> () -> null));
  }

  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static Advisor idempotentListenerAdvisor(ObjectProvider<IdempotentListenerInterceptor> interceptor) {
    DefaultPointcutAdvisor advisor = new DefaultPointcutAdvisor(
        new AnnotationMatchingPointcut(null, IdempotentListener.class, true), new ResolvedOnce(interceptor));
    advisor.setOrder(IdemAutoConfiguration.ORDER);
    return advisor;
  }
}
