package dev.idem.spring;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.spring.support.ResultShapes;
import dev.idem.spring.web.IdemBodyFilter;
import dev.idem.spring.web.IdemExceptionHandler;
import dev.idem.spring.web.IdemTokenController;
import dev.idem.spring.web.ResponseEntityShapes;
import dev.idem.spring.web.ServletRequestView;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.web.servlet.DispatcherServlet;

/**
 * The Spring MVC part: the current request for keys, subjects and fingerprints; the body kept for
 * fingerprints; {@code ResponseEntity} results stored with their status and headers; idem's
 * refusals as {@code ProblemDetail}s; {@code POST /_idem/tokens}.
 */
@AutoConfiguration(before = IdemAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({DispatcherServlet.class, jakarta.servlet.Filter.class})
public class IdemWebAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  IdemAutoConfiguration.RequestViews idemRequestViews(IdemProperties props) {
    var s = ServletRequestView.supplier(props.web().maxBody().toBytes());
    return s::get;
  }

  @Bean
  @ConditionalOnMissingBean
  ResultShapes idemResultShapes(ObjectProvider<ObjectMapper> mapper) {
    return new ResponseEntityShapes(mapper.getIfAvailable(ObjectMapper::new));
  }

  @Bean
  @ConditionalOnMissingBean(name = "idemBodyFilter")
  FilterRegistrationBean<IdemBodyFilter> idemBodyFilter(IdemProperties props) {
    FilterRegistrationBean<IdemBodyFilter> r = new FilterRegistrationBean<>(new IdemBodyFilter(props.web().maxBody().toBytes()));
    // Before anything reads the body or its parameters (Spring Security's filters, at -100, do).
    r.setOrder(Ordered.HIGHEST_PRECEDENCE + 100);
    r.setName("idemBodyFilter");
    return r;
  }

  @Bean
  @ConditionalOnMissingBean
  IdemExceptionHandler idemExceptionHandler() {
    return new IdemExceptionHandler();
  }

  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnProperty(prefix = "idem.tokens", name = "enabled", havingValue = "true", matchIfMissing = true)
  IdemTokenController idemTokenController(IdemTokens tokens) {
    return new IdemTokenController(tokens);
  }
}
