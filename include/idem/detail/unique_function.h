// A move-only std::function (C++23 has std::move_only_function; we target C++20).
// Holds any callable, including Asio completion handlers, which are move-only. Callables
// of up to kInlineSize bytes that move without throwing live inside the object: the
// store's hot path (one callback per operation) then allocates nothing for them.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace idem::detail {

template <class Signature>
class UniqueFunction;

template <class R, class... Args>
class UniqueFunction<R(Args...)> {
 public:
  UniqueFunction() noexcept = default;
  UniqueFunction(std::nullptr_t) noexcept {}

  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, UniqueFunction> &&
                                              std::is_invocable_r_v<R, std::decay_t<F>&, Args...>>>
  UniqueFunction(F&& f) {
    using Fn = std::decay_t<F>;
    if constexpr (fits_inline<Fn>()) {
      callable_ = ::new (static_cast<void*>(&buffer_)) Inline<Fn>(std::forward<F>(f));
    } else {
      callable_ = new Heap<Fn>(std::forward<F>(f));
    }
  }

  UniqueFunction(UniqueFunction&& other) noexcept { take(other); }
  UniqueFunction& operator=(UniqueFunction&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  UniqueFunction& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  ~UniqueFunction() { reset(); }

  explicit operator bool() const noexcept { return callable_ != nullptr; }
  R operator()(Args... args) { return callable_->call(std::forward<Args>(args)...); }

 private:
  static constexpr std::size_t kInlineSize = 64;

  struct Callable {
    virtual R call(Args&&... args) = 0;
    // Moves an inline callable into `buffer` and returns it there; a heap one returns itself.
    virtual Callable* relocate(void* buffer) noexcept = 0;
    virtual void destroy() noexcept = 0;

   protected:
    ~Callable() = default;
  };

  template <class F>
  struct Inline final : Callable {
    template <class G>
    explicit Inline(G&& g) : fn(std::forward<G>(g)) {}
    R call(Args&&... args) override { return fn(std::forward<Args>(args)...); }
    Callable* relocate(void* buffer) noexcept override {
      auto* moved = ::new (buffer) Inline(std::move(fn));
      this->~Inline();
      return moved;
    }
    void destroy() noexcept override { this->~Inline(); }
    F fn;
  };

  template <class F>
  struct Heap final : Callable {
    template <class G>
    explicit Heap(G&& g) : fn(std::forward<G>(g)) {}
    R call(Args&&... args) override { return fn(std::forward<Args>(args)...); }
    Callable* relocate(void*) noexcept override { return this; }
    void destroy() noexcept override { delete this; }
    F fn;
  };

  template <class F>
  static constexpr bool fits_inline() {
    return sizeof(Inline<F>) <= kInlineSize && alignof(Inline<F>) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<F>;
  }

  void take(UniqueFunction& other) noexcept {
    if (other.callable_) callable_ = other.callable_->relocate(&buffer_);
    other.callable_ = nullptr;
  }
  void reset() noexcept {
    if (callable_) callable_->destroy();
    callable_ = nullptr;
  }

  alignas(std::max_align_t) std::byte buffer_[kInlineSize];
  Callable* callable_ = nullptr;
};

}  // namespace idem::detail
