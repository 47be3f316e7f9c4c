-- The reference shop's tables on MySQL/MariaDB, as examples/shop/schema.cpp creates them (kMysqlSchema):
-- shop-storm creates them before the shop starts; the shop creates them when it runs alone.
CREATE TABLE IF NOT EXISTS t_sku (
  sku_id        VARBINARY(255) PRIMARY KEY,
  stock         BIGINT NOT NULL CHECK (stock >= 0),
  version       BIGINT NOT NULL,
  price         BIGINT NOT NULL,
  initial_stock BIGINT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS t_order (
  order_no   VARBINARY(255) PRIMARY KEY,
  order_id   BIGINT UNIQUE,
  biz_no     VARBINARY(255) UNIQUE,
  user_id    VARBINARY(255) NOT NULL,
  sku_id     VARBINARY(255) NOT NULL,
  event_id   VARBINARY(255) NOT NULL,
  quantity   BIGINT NOT NULL,
  amount     BIGINT NOT NULL,
  status     VARCHAR(16) NOT NULL,
  created_at BIGINT NOT NULL,
  paid_at    BIGINT,
  UNIQUE (user_id, sku_id, event_id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS t_stock_log (
  id          VARBINARY(255) PRIMARY KEY,
  idem_key    VARBINARY(1024) UNIQUE,
  fence       BIGINT,
  order_no    VARBINARY(255) NOT NULL,
  sku_id      VARBINARY(255) NOT NULL,
  quantity    BIGINT NOT NULL,
  stock_after BIGINT NOT NULL,
  created_at  BIGINT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS t_charge (
  id         VARBINARY(255) PRIMARY KEY,
  order_no   VARBINARY(255) NOT NULL,
  trade_no   TEXT NOT NULL,
  amount     BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  INDEX t_charge_order (order_no)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS t_outbox (
  id         VARBINARY(255) PRIMARY KEY,
  order_no   VARBINARY(255) NOT NULL,
  payload    TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  sent_at    BIGINT,
  INDEX t_outbox_unsent (sent_at, created_at, id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS t_points (
  order_no   VARBINARY(255) PRIMARY KEY,
  user_id    VARBINARY(255) NOT NULL,
  points     BIGINT NOT NULL,
  created_at BIGINT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS t_user_points (
  user_id VARBINARY(255) PRIMARY KEY,
  balance BIGINT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS t_sequence (
  name VARBINARY(255) PRIMARY KEY,
  n    BIGINT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS t_stats (
  name VARBINARY(255) PRIMARY KEY,
  n    BIGINT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
