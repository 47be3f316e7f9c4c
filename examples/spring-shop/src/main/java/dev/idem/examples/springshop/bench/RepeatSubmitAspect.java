package dev.idem.examples.springshop.bench;

import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.aspectj.lang.ProceedingJoinPoint;
import org.aspectj.lang.annotation.Around;
import org.aspectj.lang.annotation.Aspect;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import org.springframework.http.HttpStatus;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;
import org.springframework.web.server.ResponseStatusException;

/**
 * The articles' recipe, as Java teams write it: {@code setIfAbsent} on
 * {@code repeat:<user>:<key>} with a random owner and a TTL; a repeat is refused ("请勿重复提交");
 * an exception deletes the key with the owner-checked Lua script. No result is kept, nothing is
 * renewed, a repeat never gets the first answer: what bench/spring/run measures the starter
 * against, on the same Redis.
 */
@Aspect
public class RepeatSubmitAspect {
  private static final RedisScript<Long> UNLOCK = RedisScript.of(
      "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end", Long.class);
  private final StringRedisTemplate redis;

  public RepeatSubmitAspect(StringRedisTemplate redis) {
    this.redis = redis;
  }

  @Around("@annotation(repeat)")
  public Object around(ProceedingJoinPoint pjp, RepeatSubmit repeat) throws Throwable {
    HttpServletRequest request = ((ServletRequestAttributes) RequestContextHolder.currentRequestAttributes()).getRequest();
    String user = request.getHeader("X-User-Id");
    String key = "repeat:" + (user == null ? "" : user) + ":" + request.getHeader("Idempotency-Key");
    String owner = UUID.randomUUID().toString();
    Boolean locked = redis.opsForValue().setIfAbsent(key, owner, Duration.ofSeconds(repeat.seconds()));
    if (!Boolean.TRUE.equals(locked)) throw new ResponseStatusException(HttpStatus.CONFLICT, "请勿重复提交");
    try {
      return pjp.proceed();
    } catch (Throwable t) {
      redis.execute(UNLOCK, List.of(key), owner);
      throw t;
    }
  }
}
