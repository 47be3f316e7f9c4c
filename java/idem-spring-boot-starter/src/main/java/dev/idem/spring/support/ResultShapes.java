package dev.idem.spring.support;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.reflect.Method;
import org.springframework.core.ResolvableType;

/** Chooses how a method's result is stored ({@link ResultShape}); the web part knows ResponseEntity. */
public interface ResultShapes {
  ResultShape forMethod(Method method, Class<?> targetClass);

  /** The method's return type, its generics resolved against the target class. */
  static JavaType returnType(ObjectMapper mapper, Method method, Class<?> targetClass) {
    return mapper.getTypeFactory().constructType(ResolvableType.forMethodReturnType(method, targetClass).getType());
  }

  /** Every result as JSON of its declared type. */
  static ResultShapes json(ObjectMapper mapper) {
    return (method, targetClass) -> ResultShape.json(mapper, returnType(mapper, method, targetClass));
  }
}
