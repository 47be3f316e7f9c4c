package dev.idem.spring.shop;

/** The answer shape of yudao/RuoYi services: code 0 is success, anything else a business error. */
public record CommonResult<T>(int code, String msg, T data) {
  public static <T> CommonResult<T> ok(T data) {
    return new CommonResult<>(0, "", data);
  }

  public static <T> CommonResult<T> error(int code, String msg) {
    return new CommonResult<>(code, msg, null);
  }
}
