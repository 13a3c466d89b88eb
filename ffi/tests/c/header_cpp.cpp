// Compiles include/robota.h as C++17 (-Wall -Wextra -Werror -pedantic -fsyntax-only).
#include "robota.h"

static_assert(ROBOTA_STATUS_OK == 0, "OK is 0");

int main() {
  robota_error *err = nullptr;
  robota_provider *provider = nullptr;
  robota_status status = robota_provider_new_json(nullptr, "{}", 2, &provider, &err);
  robota_error_free(err);
  return status == ROBOTA_STATUS_OK ? 0 : 1;
}
