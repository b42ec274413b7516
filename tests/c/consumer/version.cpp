// A C++ program linked statically against an installed objstore_db: the header is C++-clean and
// the library answers the version the header names.
#include <cstdio>
#include <cstring>

#include "objstore_db.h"

int main() {
  const char *version = objstore_db_version();
  std::printf("objstore_db %s\n", version);
  return std::strcmp(version, OBJSTORE_DB_VERSION) == 0 ? 0 : 1;
}
