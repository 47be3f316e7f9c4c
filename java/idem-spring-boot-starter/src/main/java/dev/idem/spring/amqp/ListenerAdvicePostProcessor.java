package dev.idem.spring.amqp;

import org.aopalliance.aop.Advice;
import org.springframework.amqp.rabbit.config.AbstractRabbitListenerContainerFactory;
import org.springframework.beans.factory.config.BeanPostProcessor;

/** Puts {@link CurrentMessage} first in the advice chain of every RabbitMQ listener container factory. */
public final class ListenerAdvicePostProcessor implements BeanPostProcessor {
  private final CurrentMessage advice = new CurrentMessage();

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    if (bean instanceof AbstractRabbitListenerContainerFactory<?> f) {
      Advice[] chain = f.getAdviceChain();
      if (chain == null) chain = new Advice[0];
      for (Advice a : chain) {
        if (a instanceof CurrentMessage) return bean;
      }
      Advice[] withOurs = new Advice[chain.length + 1];
      withOurs[0] = advice;
      System.arraycopy(chain, 0, withOurs, 1, chain.length);
      f.setAdviceChain(withOurs);
    }
    return bean;
  }
}
