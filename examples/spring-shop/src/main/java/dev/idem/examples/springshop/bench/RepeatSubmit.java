package dev.idem.examples.springshop.bench;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The articles' hand-written annotation (yudao's {@code @Idempotent}, RuoYi's {@code @RepeatSubmit}),
 * for the benchmark only: what the starter is measured against (bench/spring/run).
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
public @interface RepeatSubmit {
  /** How long the key is held, in seconds. */
  int seconds() default 60;
}
