package dev.idem.spring.shop;

import dev.idem.spring.Idempotent;
import java.util.Map;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseBody;

/** A form protected by one-time tokens (RuoYi's @RepeatSubmit's job), and its Thymeleaf page. */
@Controller
public class FormController {
  private final Executions executions;

  public FormController(Executions executions) {
    this.executions = executions;
  }

  @GetMapping("/contact")
  public String page() {
    return "contact";
  }

  @PostMapping("/contact")
  @ResponseBody
  @Idempotent(token = true)
  public Map<String, Object> submit(@RequestParam String name, @RequestParam("_idem_token") String token)
      throws InterruptedException {
    int n = executions.add("contact:" + token);
    Thread.sleep(100);
    if (name.equals("fail")) throw new IllegalStateException("the mail server is down");
    return Map.of("name", name, "execution", n);
  }
}
