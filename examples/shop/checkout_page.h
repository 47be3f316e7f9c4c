// GET /: the checkout page. Served through the gateway (same origin), so it fetches its
// one-time token from the gateway's POST /_idem/tokens and submits with it. The Pay
// button is deliberately not disabled on click: double clicks are the point, and every
// click adds a line showing what came back.
#pragma once

#include <string_view>

namespace shop {

inline constexpr std::string_view kCheckoutPage = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>idem shop: checkout</title>
<style>
  body { font: 15px/1.4 system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; }
  label { display: block; margin: .4rem 0; }
  label span { display: inline-block; width: 6rem; }
  button { margin: .8rem .4rem 0 0; padding: .4rem 1.2rem; }
  #token { color: #666; font-size: 85%; word-break: break-all; }
  .order-no { font-family: monospace; font-weight: bold; }
  .replayed { color: #a60; }
  .error { color: #b00; }
</style>
</head>
<body>
<h1>Checkout</h1>
<label><span>User</span><input id="user"></label>
<label><span>SKU</span><input id="sku" value="sku-1"></label>
<label><span>Event</span><input id="event" value="e1"></label>
<label><span>Quantity</span><input id="quantity" type="number" min="1" max="100" value="1"></label>
<p id="token">fetching a token…</p>
<button id="pay">Pay</button><button id="new-order">New order</button>
<ol id="results"></ol>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
let token = null;

$("user").value = "web-" + Math.random().toString(36).slice(2, 10);

// A one-time token from the gateway, bound to the user: one order per token.
async function newToken() {
  token = null;
  $("token").textContent = "fetching a token…";
  try {
    const res = await fetch("/_idem/tokens", { method: "POST", headers: { "X-User-Id": $("user").value } });
    const body = await res.json();
    if (!res.ok) throw new Error(body.title || res.status);
    token = body.token;
    $("token").textContent = "token " + token + " (valid " + body.expires_in + " s)";
  } catch (e) {
    $("token").textContent = "no token: " + e.message;
  }
}

function addResult(orderNo, status, replayed, error) {
  const li = document.createElement("li");
  const no = document.createElement("span");
  no.className = "order-no";
  no.textContent = orderNo || "—";
  li.append(no, " HTTP " + status + (replayed ? " · Idempotent-Replayed: true" : " · first answer"));
  if (replayed) li.classList.add("replayed");
  if (error) {
    li.classList.add("error");
    li.append(" · " + error);
  }
  $("results").append(li);
}

// Not disabled while in flight: every click is a submission, the gateway sorts them out.
async function pay() {
  const order = {
    user_id: $("user").value, sku_id: $("sku").value, event_id: $("event").value,
    quantity: Number($("quantity").value),
  };
  try {
    const res = await fetch("/orders", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Token": token || "",
                 "X-User-Id": $("user").value },
      body: JSON.stringify(order),
    });
    const body = await res.json().catch(() => ({}));
    addResult(body.order_no, res.status, res.headers.get("Idempotent-Replayed") === "true",
              res.ok ? null : (body.title || body.detail || "failed"));
  } catch (e) {
    addResult(null, "—", false, e.message);
  }
}

$("pay").addEventListener("click", pay);
$("new-order").addEventListener("click", newToken);
$("user").addEventListener("change", newToken);
newToken();
</script>
</body>
</html>
)html";

}  // namespace shop
