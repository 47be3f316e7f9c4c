package dev.idem.client;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * A test class against one real {@code idem serve} of its own, started before its tests and
 * stopped after them, with a client holding the admin token.
 */
abstract class GatewayTest {
  static GatewayProcess gateway;
  static Idem idem;

  @BeforeAll
  static void startGateway() throws Exception {
    gateway = GatewayProcess.start();
    idem = gateway.client();
  }

  @AfterAll
  static void stopGateway() throws Exception {
    if (gateway != null) gateway.close();
    gateway = null;
    idem = null;
  }
}
