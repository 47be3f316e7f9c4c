// What db.cpp and db_mysql.cpp share (not part of db.h's interface): the base of every
// connection, which tells the pool whether the last use broke it, and the MySQL opener.
#pragma once

#include <memory>
#include <string>

#include "db.h"

namespace shop::detail {

class Connection : public Db {
 public:
  bool broken() const noexcept { return broken_; }

 protected:
  // Throws DbError(kind, what); an unavailable connection is broken for good.
  [[noreturn]] void fail(DbError::Kind kind, const std::string& what) {
    if (kind == DbError::Kind::unavailable) broken_ = true;
    throw DbError(kind, what);
  }

 private:
  bool broken_ = false;
};

// "mysql://USER:PASS@HOST[:PORT]/DATABASE" (db_mysql.cpp); throws DbError(unavailable).
std::unique_ptr<Db> open_mysql(const std::string& uri);

}  // namespace shop::detail
