/* random_values.h - written by tests/ref/gen_random.py; do not
** edit. */
#define REF_SEED 42ull
#define REF_NAME "fc1.weight"
#define REF_STREAM 0x323794344574cf1full
#define REF_EMPTY_STREAM 0x14650fb0739d0383ull
#define REF_KEY 0xafd16e247e5478a2ull
static const uint32_t ref_uniform_bits[4] = {
    0x3f5c21a2u, 0x3e86748eu, 0x3ef591bau, 0x3f758c84u};
static const double ref_uniform_double[2] = {
    0.18097862566759193, 0.942280298678299};
static const double ref_normal = -1.0497336095911851;
static const float ref_fill[5] = {
    -0.180070519f, 1.88884687f, -0.894151986f, -0.114995658f, -0.30335629f};
