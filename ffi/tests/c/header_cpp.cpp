// Compiles include/robota.h as C++17 (-Wall -Wextra -Werror -pedantic -fsyntax-only).
#include "robota.h"

static_assert(ROBOTA_STATUS_OK == 0, "OK is 0");

// Host callbacks can be plain functions (or captureless lambdas) with C linkage types.
static void on_call(void *, const char *, size_t, robota_completion *completion) {
  robota_completion_resolve(completion, "{}", 2, nullptr);
}

static void on_result(void *, const robota_error *, const char *, size_t) {}

int main() {
  robota_error *err = nullptr;
  robota_provider *provider = nullptr;
  robota_status status = robota_provider_new_json(nullptr, "{}", 2, &provider, &err);
  robota_error_free(err);
  robota_session_options *options = nullptr;
  status = robota_session_options_new(nullptr, 0, &options, nullptr);
  robota_session_options_set_permission_handler(options, on_call, nullptr, nullptr, nullptr);
  robota_query *query = nullptr;
  robota_query_new(provider, nullptr, 0, &query, nullptr);
  robota_query_run(query, "hi", 2, on_result, nullptr, nullptr);
  robota_query_free(query);
  robota_session_options_free(options);
  return status == ROBOTA_STATUS_OK ? 0 : 1;
}
