/*
 * pulsar_ops._native: the scrape's native hot paths; first, BookKeeper ledger metadata -> the bk_ledgers row parts.
 *
 * bk_ledger(data: bytes) -> tuple | None
 *
 * Returns, for a well-formed, ASCII-only, format-version-3 (binary) or 2 (protobuf text in the exact shape
 * TextFormat prints) ledger metadata znode, exactly the values the pure-Python
 * path (pulsar_ops.scrape.extract_fast._bk_ledger over formats.ledger_metadata.ledger_metadata_fields) computes:
 *
 *   (format_version, state, length, last_entry_id, ensemble_size, write_quorum, ack_quorum, digest_type, ctime_ms,
 *    application, component, managed_ledger, cursor, schema_id, compacted_topic,
 *    custom_metadata_json, bookies, ensembles_json)
 *
 * It returns None for ANYTHING else: another format version, a truncated or malformed message, a missing required
 * field, an unknown field or enum value, a duplicate custom-metadata key or segment start, non-ASCII text, sizes
 * past its fixed limits. The caller then takes the pure-Python path, which gives the same values or the precise
 * DecodeError. So this module never decides an error; it only makes the common case fast. Equivalence with the
 * Python path is property-tested (tests/unit/test_native.py).
 *
 * Field numbers and names: bookkeeper-server DataFormats.proto, LedgerMetadataFormat (see formats/proto.py); v2 is
 * that message as TextFormat.printToString writes it (LedgerMetadataSerDe, formats/ledger_metadata.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NATIVE_ABI 15
#define PACK_MAGIC 0x01 /* a packed chunk's first byte (pack_reads): never a marshal stream's (a type code, possibly | 0x80) */

#define MAX_SEGMENTS 256
#define MAX_MEMBERS 1024
#define MAX_CUSTOM 64

static const char V3_HEADER[] = "BookieMetadataFormatVersion\t3\n";
#define V3_HEADER_LEN (sizeof(V3_HEADER) - 1)
static const char V2_HEADER[] = "BookieMetadataFormatVersion\t2\n";
#define V2_HEADER_LEN (sizeof(V2_HEADER) - 1)
static const char V1_HEADER[] = "BookieMetadataFormatVersion\t1\n";
#define V1_HEADER_LEN (sizeof(V1_HEADER) - 1)
#define V1_IN_RECOVERY (-102) /* LedgerMetadataSerDe.IN_RECOVERY: a CLOSED line with it reads as IN_RECOVERY */

typedef struct {
    const uint8_t *p;
    Py_ssize_t n;
} Slice;

typedef struct {
    int64_t first;
    int mstart;
    int mcount;
} Segment;

typedef struct {
    Slice key;
    Slice value;
    int b64; /* not UTF-8: the JSON writes it "base64:..." */
} Custom;

static int utf8_valid(const uint8_t *b, Py_ssize_t n);
static const char *CUSTOM_KEYS[6];

typedef struct {
    char *buf;
    size_t len;
    size_t cap;
} Buf;

/* ---- varints and text -------------------------------------------------------------------------------------- */

static int read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
    const uint8_t *p = *pp;
    uint64_t r = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end) return -1;
        uint8_t b = *p++;
        if (i == 9 && b > 1) return -1; /* past 64 bits: let the Python path judge it */
        r |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *pp = p;
            *out = r;
            return 0;
        }
    }
    return -1;
}

static int read_slice(const uint8_t **pp, const uint8_t *end, Slice *out) {
    uint64_t n;
    if (read_varint(pp, end, &n) < 0) return -1;
    if (n > (uint64_t)(end - *pp)) return -1;
    out->p = *pp;
    out->n = (Py_ssize_t)n;
    *pp += n;
    return 0;
}

static int is_ascii(Slice s) {
    for (Py_ssize_t i = 0; i < s.n; i++) {
        if (s.p[i] & 0x80) return 0;
    }
    return 1;
}

static int slice_eq(Slice a, Slice b) { return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, (size_t)a.n) == 0); }

static int slice_eq_str(Slice a, const char *s) {
    size_t n = strlen(s);
    return (size_t)a.n == n && memcmp(a.p, s, n) == 0;
}

/* Python's str ordering for ASCII strings: bytewise, a proper prefix first. */
static int slice_cmp(Slice a, Slice b) {
    Py_ssize_t n = a.n < b.n ? a.n : b.n;
    int c = n ? memcmp(a.p, b.p, (size_t)n) : 0;
    if (c) return c;
    return (a.n > b.n) - (a.n < b.n);
}

/* ---- a growable char buffer for the JSON columns ----------------------------------------------------------- */

static int buf_grow(Buf *b, size_t extra) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    char *nb = (char *)realloc(b->buf, cap);
    if (!nb) return -1;
    b->buf = nb;
    b->cap = cap;
    return 0;
}

/* inlined: a column append is a few of these per value, most of them 4 or 8 bytes (a constant-size memcpy) */
static inline __attribute__((always_inline)) int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    return buf_grow(b, extra);
}

static inline __attribute__((always_inline)) int buf_put(Buf *b, const char *s, size_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    return 0;
}

/* The bytes json's ensure_ascii writes as they are (printable ASCII but '"' and '\\'): 1 in this table. */
static uint8_t JSON_PLAIN[256];

static void json_plain_init(void) {
    for (int c = 0x20; c < 0x7F; c++) JSON_PLAIN[c] = c != '"' && c != '\\';
}

/* json.dumps(str) with ensure_ascii for an ASCII string: escapes '"', '\\', control characters and DEL. */
static int buf_json_str(Buf *b, Slice s) {
    static const char hex[] = "0123456789abcdef";
    if (buf_reserve(b, (size_t)s.n * 6 + 2) < 0) return -1;
    char *o = b->buf + b->len;
    *o++ = '"';
    for (Py_ssize_t i = 0; i < s.n; i++) {
        if (JSON_PLAIN[s.p[i]]) { /* a run of plain bytes, copied at once (most values are one run) */
            Py_ssize_t j = i + 1;
            while (j < s.n && JSON_PLAIN[s.p[j]]) j++;
            memcpy(o, s.p + i, (size_t)(j - i));
            o += j - i;
            i = j - 1;
            continue;
        }
        uint8_t c = s.p[i];
        switch (c) {
            case '"': *o++ = '\\'; *o++ = '"'; break;
            case '\\': *o++ = '\\'; *o++ = '\\'; break;
            case '\n': *o++ = '\\'; *o++ = 'n'; break;
            case '\r': *o++ = '\\'; *o++ = 'r'; break;
            case '\t': *o++ = '\\'; *o++ = 't'; break;
            case '\b': *o++ = '\\'; *o++ = 'b'; break;
            case '\f': *o++ = '\\'; *o++ = 'f'; break;
            default:
                if (c < 0x20 || c == 0x7F) {
                    *o++ = '\\'; *o++ = 'u'; *o++ = '0'; *o++ = '0';
                    *o++ = hex[c >> 4]; *o++ = hex[c & 0xF];
                } else if (c >= 0x80) {
                    /* valid UTF-8 (the callers check it): the code point as json's ensure_ascii writes it,
                       \\uxxxx, a surrogate pair above U+FFFF (encode_basestring_ascii) */
                    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
                    if (i + len > s.n) return -1;
                    uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
                    for (int k = 1; k < len; k++) cp = (cp << 6) | (s.p[i + k] & 0x3F);
                    i += len - 1;
                    uint32_t units[2] = {cp, 0};
                    int nu = 1;
                    if (cp >= 0x10000) {
                        units[0] = 0xD800 | ((cp - 0x10000) >> 10);
                        units[1] = 0xDC00 | ((cp - 0x10000) & 0x3FF);
                        nu = 2;
                    }
                    for (int u = 0; u < nu; u++) {
                        *o++ = '\\'; *o++ = 'u';
                        *o++ = hex[(units[u] >> 12) & 0xF]; *o++ = hex[(units[u] >> 8) & 0xF];
                        *o++ = hex[(units[u] >> 4) & 0xF]; *o++ = hex[units[u] & 0xF];
                    }
                } else {
                    *o++ = (char)c;
                }
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->buf);
    return 0;
}

/* ---- the messages ------------------------------------------------------------------------------------------ */

typedef struct {
    int has_quorum, has_ensemble, has_length, has_last, has_state, has_digest, has_ack, has_ctime;
    int32_t quorum, ensemble, ack;
    int64_t length, last, ctime;
    int state, digest;
    Segment seg[MAX_SEGMENTS];
    int nseg;
    Slice members[MAX_MEMBERS];
    int nmembers;
    Custom custom[MAX_CUSTOM];
    int ncustom;
} Ledger;

static int parse_segment(const uint8_t *p, const uint8_t *end, Ledger *L) {
    if (L->nseg >= MAX_SEGMENTS) return -1;
    Segment *s = &L->seg[L->nseg];
    int has_first = 0;
    s->mstart = L->nmembers;
    s->mcount = 0;
    while (p < end) {
        uint64_t key, v;
        if (read_varint(&p, end, &key) < 0 || key > 0xFFFFFFFFu) return -1;
        if (key == ((1 << 3) | 2)) { /* ensembleMember: repeated string */
            Slice m;
            if (read_slice(&p, end, &m) < 0 || !is_ascii(m) || L->nmembers >= MAX_MEMBERS) return -1;
            L->members[L->nmembers++] = m;
            s->mcount++;
        } else if (key == ((2 << 3) | 0)) { /* firstEntryId: required int64 */
            if (read_varint(&p, end, &v) < 0) return -1;
            s->first = (int64_t)v;
            has_first = 1;
        } else {
            return -1;
        }
    }
    if (!has_first) return -1;
    L->nseg++;
    return 0;
}

static int parse_custom(const uint8_t *p, const uint8_t *end, Ledger *L) {
    if (L->ncustom >= MAX_CUSTOM) return -1;
    Custom *c = &L->custom[L->ncustom];
    c->key.p = c->value.p = (const uint8_t *)"";
    c->key.n = c->value.n = 0;
    while (p < end) {
        uint64_t key;
        if (read_varint(&p, end, &key) < 0 || key > 0xFFFFFFFFu) return -1;
        if (key == ((1 << 3) | 2)) {
            if (read_slice(&p, end, &c->key) < 0) return -1;
        } else if (key == ((2 << 3) | 2)) {
            if (read_slice(&p, end, &c->value) < 0) return -1;
        } else {
            return -1;
        }
    }
    if (!is_ascii(c->key)) return -1;
    c->b64 = 0;
    if (!is_ascii(c->value)) {
        /* Non-ASCII, under a key the row does not extract: only custom_metadata_json shows it, as json.dumps
           writes the decoded value (\\u escapes, buf_json_str) or, not UTF-8, as "base64:<value>"
           (scrape.extract._custom_json). Under an extracted key it is Python's. */
        for (int i = 0; i < 6; i++) {
            if (slice_eq_str(c->key, CUSTOM_KEYS[i])) return -1;
        }
        c->b64 = !utf8_valid(c->value.p, c->value.n);
    }
    for (int i = 0; i < L->ncustom; i++) {
        if (slice_eq(L->custom[i].key, c->key)) return -1; /* duplicate key: the Python path decides */
    }
    L->ncustom++;
    return 0;
}

static int check_ledger(Ledger *L);

static int parse_ledger(const uint8_t *p, const uint8_t *end, Ledger *L) {
    while (p < end) {
        uint64_t key, v;
        Slice s;
        if (read_varint(&p, end, &key) < 0 || key > 0xFFFFFFFFu) return -1;
        uint32_t field = (uint32_t)(key >> 3), wire = (uint32_t)(key & 7);
        if (wire == 0) {
            if (read_varint(&p, end, &v) < 0) return -1;
            switch (field) {
                case 1: L->quorum = (int32_t)(uint32_t)v; L->has_quorum = 1; break;
                case 2: L->ensemble = (int32_t)(uint32_t)v; L->has_ensemble = 1; break;
                case 3: L->length = (int64_t)v; L->has_length = 1; break;
                case 4: L->last = (int64_t)v; L->has_last = 1; break;
                case 5:
                    if (v < 1 || v > 3) return -1;
                    L->state = (int)v; L->has_state = 1; break;
                case 7:
                    if (v < 1 || v > 4) return -1;
                    L->digest = (int)v; L->has_digest = 1; break;
                case 9: L->ack = (int32_t)(uint32_t)v; L->has_ack = 1; break;
                case 10: L->ctime = (int64_t)v; L->has_ctime = 1; break;
                case 12: break; /* cToken: not stored */
                default: return -1;
            }
        } else if (wire == 2) {
            if (read_slice(&p, end, &s) < 0) return -1;
            switch (field) {
                case 6: if (parse_segment(s.p, s.p + s.n, L) < 0) return -1; break;
                case 8: break; /* password: not stored */
                case 11: if (parse_custom(s.p, s.p + s.n, L) < 0) return -1; break;
                default: return -1;
            }
        } else {
            return -1;
        }
    }
    return check_ledger(L);
}

/* What the parsers leave to Python beyond the message itself: missing required fields, duplicate or unordered
 * segment starts, and what BookKeeper's LedgerMetadataBuilder / LedgerMetadataImpl / BookieId refuse. */
static int check_ledger(Ledger *L) {
    if (!(L->has_quorum && L->has_ensemble && L->has_length && L->has_state)) return -1;
    for (int i = 0; i < L->nseg; i++) {
        for (int j = 0; j < i; j++) {
            if (L->seg[i].first == L->seg[j].first) return -1; /* duplicate segment start */
        }
    }
    /* What BookKeeper's LedgerMetadataBuilder / LedgerMetadataImpl / BookieId refuse: let Python say why. */
    int32_t ack = L->has_ack ? L->ack : L->quorum;
    if (L->nseg == 0 || L->ensemble < L->quorum || L->quorum < ack) return -1;
    for (int i = 0; i < L->nseg; i++) {
        if (L->seg[i].mcount != L->ensemble) return -1;
        if (i > 0 && L->seg[i].first <= L->seg[i - 1].first) return -1;
    }
    for (int i = 0; i < L->nmembers; i++) {
        Slice m = L->members[i];
        if (m.n == 0) return -1;
        if (m.n == 8 && strncasecmp((const char *)m.p, "readonly", 8) == 0) return -1;
        for (Py_ssize_t k = 0; k < m.n; k++) {
            uint8_t c = m.p[k];
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= ':' && c <= '_') || c == '-' || c == '.'))
                return -1;
        }
    }
    return 0;
}

/* ---- v2: protobuf text, only in the exact shape TextFormat prints it ------------------------------------------
 * The twin of formats.ledger_metadata._text_v2_fields, stricter: printable ASCII lines only (no tab, no escape,
 * no comment, no quote other than the string delimiters), each custom-metadata entry with a non-empty key and
 * value, positive quorum and ensemble sizes and entry ids from 0. Anything else (and everything _text_v2_fields
 * refuses) gives -1: Python's text_format then decides the values or the error. */

static int v2_int(const uint8_t *p, const uint8_t *e, int64_t lo, int64_t hi, int64_t *out) {
    int neg = p < e && *p == '-';
    if (neg) p++;
    if (p == e || e - p > 19 || (*p == '0' && e - p > 1)) return -1;
    uint64_t v = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') return -1;
        v = v * 10 + (uint64_t)(*p - '0'); /* at most 19 digits: below 2^64 */
    }
    int64_t x;
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1) return -1;
        x = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX) return -1;
        x = (int64_t)v;
    }
    if (x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

/* "..." with no quote inside: the slice between the quotes */
static int v2_str(const uint8_t *p, const uint8_t *e, Slice *out) {
    if (e - p < 2 || p[0] != '"' || e[-1] != '"') return -1;
    if (memchr(p + 1, '"', (size_t)(e - p - 2))) return -1;
    out->p = p + 1;
    out->n = e - p - 2;
    return 0;
}

/* The line starting at p (up to its newline or end), its surrounding spaces trimmed into [*ls, *le); returns where
 * the next line starts. */
static const uint8_t *trimmed_line(const uint8_t *p, const uint8_t *end, const uint8_t **ls, const uint8_t **le) {
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    const uint8_t *s = p, *e = nl ? nl : end;
    while (s < e && *s == ' ') s++;
    while (e > s && e[-1] == ' ') e--;
    *ls = s;
    *le = e;
    return nl ? nl + 1 : end;
}

/* The first ": " of the line [ls, le) (a TextFormat field's separator), NULL when there is none. */
static const uint8_t *field_sep(const uint8_t *ls, const uint8_t *le) {
    for (const uint8_t *q = ls; q + 1 < le; q++) {
        if (q[0] == ':' && q[1] == ' ') return q;
    }
    return NULL;
}

static int v2_is(const uint8_t *p, const uint8_t *e, const char *word) {
    size_t n = strlen(word);
    return (size_t)(e - p) == n && memcmp(p, word, n) == 0;
}

enum { V2_QUORUM, V2_ENSEMBLE, V2_LENGTH, V2_LAST, V2_ACK, V2_CTIME, V2_CTOKEN, V2_STATE, V2_DIGEST, V2_PASSWORD };
static const char *V2_NAMES[] = {"quorumSize", "ensembleSize", "length", "lastEntryId", "ackQuorumSize", "ctime",
                                 "cToken", "state", "digestType", "password"};
#define V2_NNAMES 10

static int parse_v2_text(const uint8_t *p, const uint8_t *end, Ledger *L) {
    for (const uint8_t *q = p; q < end; q++) {
        uint8_t c = *q;
        if (c != '\n' && (c < 0x20 || c > 0x7E || c == '\\' || c == '#' || c == '\'')) return -1;
    }
    int nested = 0; /* 1 segment, 2 customMetadata */
    int has_first = 0, has_key = 0, has_value = 0;
    unsigned seen = 0;
    Custom cur;
    Segment *seg = NULL;
    while (p < end) {
        const uint8_t *ls, *le;
        p = trimmed_line(p, end, &ls, &le);
        if (ls == le) continue;
        if (le - ls == 1 && *ls == '}') {
            if (nested == 1) {
                if (!has_first) return -1;
                L->nseg++;
            } else if (nested == 2) {
                if (!has_key || !has_value || L->ncustom >= MAX_CUSTOM) return -1;
                for (int i = 0; i < L->ncustom; i++) {
                    if (slice_eq(L->custom[i].key, cur.key)) return -1; /* a duplicate key: Python decides */
                }
                L->custom[L->ncustom++] = cur;
            } else {
                return -1;
            }
            nested = 0;
            continue;
        }
        if (le - ls >= 2 && le[-1] == '{' && le[-2] == ' ') {
            if (nested) return -1;
            if (v2_is(ls, le - 2, "segment")) {
                if (L->nseg >= MAX_SEGMENTS) return -1;
                seg = &L->seg[L->nseg];
                seg->mstart = L->nmembers;
                seg->mcount = 0;
                has_first = 0;
                nested = 1;
            } else if (v2_is(ls, le - 2, "customMetadata")) {
                has_key = has_value = cur.b64 = 0;
                nested = 2;
            } else {
                return -1;
            }
            continue;
        }
        const uint8_t *sep = field_sep(ls, le);
        if (!sep || memchr(ls, ' ', (size_t)(sep - ls))) return -1;
        const uint8_t *vs = sep + 2;
        Slice sv;
        int64_t iv;
        if (nested == 1) {
            if (v2_is(ls, sep, "ensembleMember")) {
                if (v2_str(vs, le, &sv) < 0 || L->nmembers >= MAX_MEMBERS) return -1;
                L->members[L->nmembers++] = sv;
                seg->mcount++;
            } else if (v2_is(ls, sep, "firstEntryId") && !has_first) {
                if (v2_int(vs, le, 0, INT64_MAX, &iv) < 0) return -1;
                seg->first = iv;
                has_first = 1;
            } else {
                return -1;
            }
            continue;
        }
        if (nested == 2) {
            if (v2_str(vs, le, &sv) < 0 || sv.n == 0) return -1;
            if (v2_is(ls, sep, "key") && !has_key) {
                cur.key = sv;
                has_key = 1;
            } else if (v2_is(ls, sep, "value") && !has_value) {
                cur.value = sv;
                has_value = 1;
            } else {
                return -1;
            }
            continue;
        }
        int k = 0;
        while (k < V2_NNAMES && !v2_is(ls, sep, V2_NAMES[k])) k++;
        if (k == V2_NNAMES || (seen & (1u << k))) return -1;
        seen |= 1u << k;
        switch (k) {
            case V2_QUORUM:
            case V2_ENSEMBLE:
            case V2_ACK:
                if (v2_int(vs, le, 1, INT32_MAX, &iv) < 0) return -1;
                if (k == V2_QUORUM) L->quorum = (int32_t)iv, L->has_quorum = 1;
                else if (k == V2_ENSEMBLE) L->ensemble = (int32_t)iv, L->has_ensemble = 1;
                else L->ack = (int32_t)iv, L->has_ack = 1;
                break;
            case V2_LENGTH:
            case V2_LAST:
            case V2_CTIME:
            case V2_CTOKEN:
                if (v2_int(vs, le, INT64_MIN, INT64_MAX, &iv) < 0) return -1;
                if (k == V2_LENGTH) L->length = iv, L->has_length = 1;
                else if (k == V2_LAST) L->last = iv, L->has_last = 1;
                else if (k == V2_CTIME) L->ctime = iv, L->has_ctime = 1;
                break;
            case V2_STATE:
                if (v2_is(vs, le, "OPEN")) L->state = 1;
                else if (v2_is(vs, le, "IN_RECOVERY")) L->state = 2;
                else if (v2_is(vs, le, "CLOSED")) L->state = 3;
                else return -1;
                L->has_state = 1;
                break;
            case V2_DIGEST:
                if (v2_is(vs, le, "CRC32")) L->digest = 1;
                else if (v2_is(vs, le, "HMAC")) L->digest = 2;
                else if (v2_is(vs, le, "CRC32C")) L->digest = 3;
                else if (v2_is(vs, le, "DUMMY")) L->digest = 4;
                else return -1;
                L->has_digest = 1;
                break;
            default: /* password: not stored */
                if (v2_str(vs, le, &sv) < 0) return -1;
        }
    }
    if (nested) return -1;
    return check_ledger(L);
}

/* ---- v1: BookKeeper's oldest text format (bookkeeper-server LedgerMetadataSerDe.parseVersion1Config) ----------
 * The twin of formats.ledger_metadata._decode_v1, stricter: printable ASCII and tabs only, '\n' line ends (no
 * '\r': Java's readLine splits there too, Python decides), numbers without a '+' or leading zeros (v2_int), no
 * empty line. Three number lines (quorumSize, ensembleSize, length), then "firstEntryId\tmember\t..." lines until
 * a "lastEntryId\tCLOSED" line (what follows it is not read) or the end. Anything else gives -1. */
static int parse_v1_text(const uint8_t *p, const uint8_t *end, Ledger *L) {
    for (const uint8_t *q = p; q < end; q++) {
        uint8_t c = *q;
        if (c != '\n' && c != '\t' && (c < 0x20 || c > 0x7E)) return -1;
    }
    int line = 0;
    L->state = 1; /* OPEN */
    L->has_state = 1;
    L->has_last = 1;
    L->last = -1;
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        const uint8_t *ls = p, *le = nl ? nl : end;
        p = nl ? nl + 1 : end; /* a '\n' at the very end does not start another line */
        if (ls == le) return -1; /* an empty line: Python's "malformed line" (or, in the header, not a number) */
        int64_t iv;
        if (line < 3) {
            if (memchr(ls, '\t', (size_t)(le - ls))) return -1;
            if (v2_int(ls, le, 0, line == 2 ? INT64_MAX : INT32_MAX, &iv) < 0) return -1;
            if (line == 0) L->quorum = (int32_t)iv, L->has_quorum = 1;
            else if (line == 1) L->ensemble = (int32_t)iv, L->has_ensemble = 1;
            else L->length = iv, L->has_length = 1;
            line++;
            continue;
        }
        while (le > ls && le[-1] == '\t') le--; /* Java's String.split drops trailing empty strings */
        const uint8_t *tab = memchr(ls, '\t', (size_t)(le - ls));
        if (!tab || tab == ls) return -1; /* fewer than two parts, or an empty first one */
        if (v2_int(ls, tab, INT64_MIN, INT64_MAX, &iv) < 0) return -1;
        const uint8_t *ms = tab + 1;
        const uint8_t *t2 = memchr(ms, '\t', (size_t)(le - ms));
        if (v2_is(ms, t2 ? t2 : le, "CLOSED")) {
            if (iv == V1_IN_RECOVERY) {
                L->state = 2;
            } else {
                L->state = 3;
                L->last = iv;
            }
            return check_ledger(L);
        }
        if (L->nseg >= MAX_SEGMENTS) return -1;
        Segment *seg = &L->seg[L->nseg++];
        seg->first = iv;
        seg->mstart = L->nmembers;
        seg->mcount = 0;
        while (ms <= le) {
            const uint8_t *me = memchr(ms, '\t', (size_t)(le - ms));
            if (!me) me = le;
            if (me == ms || L->nmembers >= MAX_MEMBERS) return -1; /* an empty member: check_built refuses it */
            L->members[L->nmembers].p = ms;
            L->members[L->nmembers++].n = me - ms;
            seg->mcount++;
            ms = me + 1;
        }
    }
    if (line < 3) return -1; /* fewer than three lines: TruncatedInputError */
    return check_ledger(L);
}

/* ---- building the Python values ---------------------------------------------------------------------------- */

static PyObject *str_of(Slice s) { return PyUnicode_DecodeASCII((const char *)s.p, s.n, NULL); }

static PyObject *STATE_NAMES[4];
static PyObject *DIGEST_NAMES[5];

static const char *CUSTOM_KEYS[6] = {
    "application", "component", "pulsar/managed-ledger", "pulsar/cursor", "pulsar/schemaId", "pulsar/compactedTopic",
};

/* "base64:<standard base64 with padding>" as a JSON string (its characters need no escape) */
static int buf_base64_str(Buf *b, Slice s) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (buf_reserve(b, 9 + ((size_t)s.n + 2) / 3 * 4 + 1) < 0) return -1;
    char *o = b->buf + b->len;
    memcpy(o, "\"base64:", 8);
    o += 8;
    Py_ssize_t i = 0;
    for (; i + 3 <= s.n; i += 3) {
        uint32_t v = (uint32_t)s.p[i] << 16 | (uint32_t)s.p[i + 1] << 8 | s.p[i + 2];
        *o++ = A[v >> 18];
        *o++ = A[(v >> 12) & 63];
        *o++ = A[(v >> 6) & 63];
        *o++ = A[v & 63];
    }
    if (s.n - i == 1) {
        uint32_t v = (uint32_t)s.p[i] << 16;
        *o++ = A[v >> 18];
        *o++ = A[(v >> 12) & 63];
        *o++ = '=';
        *o++ = '=';
    } else if (s.n - i == 2) {
        uint32_t v = (uint32_t)s.p[i] << 16 | (uint32_t)s.p[i + 1] << 8;
        *o++ = A[v >> 18];
        *o++ = A[(v >> 12) & 63];
        *o++ = A[(v >> 6) & 63];
        *o++ = '=';
    }
    *o++ = '"';
    b->len = (size_t)(o - b->buf);
    return 0;
}

/* custom_metadata_json into b (json.dumps(..., sort_keys=True) of the custom metadata) */
static int custom_json_buf(Ledger *L, Buf *b) {
    int order[MAX_CUSTOM];
    for (int i = 0; i < L->ncustom; i++) order[i] = i;
    for (int i = 1; i < L->ncustom; i++) { /* insertion sort by key: at most MAX_CUSTOM entries */
        int x = order[i], j = i - 1;
        while (j >= 0 && slice_cmp(L->custom[order[j]].key, L->custom[x].key) > 0) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = x;
    }
    int bad = buf_put(b, "{", 1);
    for (int i = 0; i < L->ncustom && !bad; i++) {
        Custom *c = &L->custom[order[i]];
        if (i) bad |= buf_put(b, ", ", 2);
        bad |= buf_json_str(b, c->key);
        bad |= buf_put(b, ": ", 2);
        bad |= c->b64 ? buf_base64_str(b, c->value) : buf_json_str(b, c->value);
    }
    bad |= buf_put(b, "}", 1);
    return bad ? -1 : 0;
}

/* ensembles_json into b: {"<first entry>": [members], ...} as scrape.extract._ensembles_json writes it */
static int ensembles_json_buf(Ledger *L, Buf *b) {
    char num[32];
    int bad = buf_put(b, "{", 1);
    for (int i = 0; i < L->nseg && !bad; i++) {
        Segment *s = &L->seg[i];
        if (i) bad |= buf_put(b, ", ", 2);
        /* "<first entry>": [ -- the int written out by hand (snprintf was a tenth of the batch) */
        char *e = num + sizeof num;
        *--e = '[';
        *--e = ' ';
        *--e = ':';
        *--e = '"';
        uint64_t u = s->first < 0 ? (uint64_t)0 - (uint64_t)s->first : (uint64_t)s->first;
        do {
            *--e = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (s->first < 0) *--e = '-';
        *--e = '"';
        bad |= buf_put(b, e, (size_t)(num + sizeof num - e));
        for (int k = 0; k < s->mcount && !bad; k++) {
            if (k) bad |= buf_put(b, ", ", 2);
            bad |= buf_json_str(b, L->members[s->mstart + k]);
        }
        bad |= buf_put(b, "]", 1);
    }
    bad |= buf_put(b, "}", 1);
    return bad ? -1 : 0;
}

static PyObject *json_str(Ledger *L, int (*fill)(Ledger *, Buf *)) {
    Buf b = {NULL, 0, 0};
    PyObject *out = fill(L, &b) < 0 ? PyErr_NoMemory() : PyUnicode_DecodeASCII(b.buf, (Py_ssize_t)b.len, NULL);
    free(b.buf);
    return out;
}

/* Whether member i is the first of its value (bookies: the distinct ensemble members in order). */
static int first_member(Ledger *L, int i) {
    for (int j = 0; j < i; j++) {
        if (slice_eq(L->members[i], L->members[j])) return 0;
    }
    return 1;
}

static PyObject *bookies_list(Ledger *L) {
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (int i = 0; i < L->nmembers; i++) {
        if (!first_member(L, i)) continue;
        PyObject *s = str_of(L->members[i]);
        if (!s || PyList_Append(out, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(s);
    }
    return out;
}

/* The custom-metadata entry under name, or NULL. */
static const Custom *custom_find(Ledger *L, const char *name) {
    for (int i = 0; i < L->ncustom; i++) {
        if (slice_eq_str(L->custom[i].key, name)) return &L->custom[i];
    }
    return NULL;
}

static PyObject *custom_value(Ledger *L, const char *name) {
    const Custom *c = custom_find(L, name);
    if (c) return str_of(c->value);
    Py_RETURN_NONE;
}

/* One static scratch record: the GIL is held while it is used and nothing that uses it calls back into Python
   code that could re-enter. Only the counters and presence flags need resetting. */
static Ledger SCRATCH;

/* Parse a ledger metadata value (v3 binary, v2 or v1 text) into SCRATCH: its format version, or 0 when the
   pure-Python path must decide. */
static int ledger_of(const uint8_t *data, Py_ssize_t size, Ledger **out) {
    Ledger *L = &SCRATCH;
    memset(L, 0, offsetof(Ledger, seg));
    L->nseg = L->nmembers = L->ncustom = 0;
    *out = L;
    if ((size_t)size >= V2_HEADER_LEN && memcmp(data, V2_HEADER, V2_HEADER_LEN) == 0)
        return parse_v2_text(data + V2_HEADER_LEN, data + size, L) < 0 ? 0 : 2;
    if ((size_t)size >= V1_HEADER_LEN && memcmp(data, V1_HEADER, V1_HEADER_LEN) == 0)
        return parse_v1_text(data + V1_HEADER_LEN, data + size, L) < 0 ? 0 : 1;
    if ((size_t)size < V3_HEADER_LEN || memcmp(data, V3_HEADER, V3_HEADER_LEN) != 0) return 0;
    const uint8_t *p = data + V3_HEADER_LEN, *end = data + size;
    /* the length prefix: at most 5 bytes, below 2^32 (ledger_metadata._read_varint32) */
    uint64_t n = 0;
    for (int i = 0;; i++) {
        if (i >= 5 || p >= end) return 0;
        uint8_t b = *p++;
        n |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) break;
    }
    if (n >= ((uint64_t)1 << 32) || n > (uint64_t)(end - p)) return 0;
    return parse_ledger(p, p + n, L) < 0 ? 0 : 3;
}

static PyObject *bk_ledger(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg)) Py_RETURN_NONE;
    Ledger *L;
    long version = ledger_of((const uint8_t *)PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg), &L);
    if (!version) Py_RETURN_NONE;
    PyObject *digest = L->has_digest ? DIGEST_NAMES[L->digest] : Py_None;
    PyObject *ctime = (L->has_ctime && L->ctime != 0) ? PyLong_FromLongLong(L->ctime) : (Py_INCREF(Py_None), Py_None);
    Py_INCREF(digest);
    PyObject *out = PyTuple_New(18);
    PyObject *items[18] = {
        PyLong_FromLong(version),
        (Py_INCREF(STATE_NAMES[L->state]), STATE_NAMES[L->state]),
        PyLong_FromLongLong(L->length),
        PyLong_FromLongLong(L->has_last ? L->last : -1),
        PyLong_FromLong(L->ensemble),
        PyLong_FromLong(L->quorum),
        PyLong_FromLong(L->has_ack ? L->ack : L->quorum),
        digest,
        ctime,
        custom_value(L, CUSTOM_KEYS[0]),
        custom_value(L, CUSTOM_KEYS[1]),
        custom_value(L, CUSTOM_KEYS[2]),
        custom_value(L, CUSTOM_KEYS[3]),
        custom_value(L, CUSTOM_KEYS[4]),
        custom_value(L, CUSTOM_KEYS[5]),
        json_str(L, custom_json_buf),
        bookies_list(L),
        json_str(L, ensembles_json_buf),
    };
    int failed = out == NULL;
    for (int k = 0; k < 18; k++) {
        if (items[k] == NULL) failed = 1;
    }
    if (failed) {
        for (int k = 0; k < 18; k++) Py_XDECREF(items[k]);
        Py_XDECREF(out);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    for (int k = 0; k < 18; k++) PyTuple_SET_ITEM(out, k, items[k]);
    return out;
}


/* ---- ManagedLedgerInfo and ManagedCursorInfo (pulsar MLDataFormats.proto) -----------------------------------
 * Both take the PLAIN message (the caller strips the compression header) and return None for anything but a
 * well-formed binary message with ASCII strings, no unknown field and no repeated singular sub-message (which
 * protobuf would merge). Return codes of the helpers: OK, BAIL (give None), FAIL (a Python exception is set). */

#define OK 0
#define BAIL 1
#define FAIL (-1)

#define NEXT_KEY(p, end, key)                                                   \
    do {                                                                        \
        if (read_varint(&(p), (end), &(key)) < 0 || (key) > 0xFFFFFFFFu) return BAIL; \
    } while (0)

static PyObject *int_or_none(int has, int64_t v) {
    if (has) return PyLong_FromLongLong(v);
    Py_RETURN_NONE;
}

/* NestedPositionInfo: 1 ledgerId, 2 entryId, both required. */
static int parse_position(Slice s, int64_t *lid, int64_t *eid) {
    const uint8_t *p = s.p, *end = s.p + s.n;
    int hl = 0, he = 0;
    while (p < end) {
        uint64_t key, v;
        NEXT_KEY(p, end, key);
        if (key == ((1 << 3) | 0)) {
            if (read_varint(&p, end, &v) < 0) return BAIL;
            *lid = (int64_t)v;
            hl = 1;
        } else if (key == ((2 << 3) | 0)) {
            if (read_varint(&p, end, &v) < 0) return BAIL;
            *eid = (int64_t)v;
            he = 1;
        } else {
            return BAIL;
        }
    }
    return (hl && he) ? OK : BAIL;
}

/* KeyValue / StringProperty: 1 and 2 both required ASCII strings. */
static int parse_str_pair(Slice s, Slice *a, Slice *b) {
    const uint8_t *p = s.p, *end = s.p + s.n;
    int ha = 0, hb = 0;
    while (p < end) {
        uint64_t key;
        NEXT_KEY(p, end, key);
        if (key == ((1 << 3) | 2)) {
            if (read_slice(&p, end, a) < 0) return BAIL;
            ha = 1;
        } else if (key == ((2 << 3) | 2)) {
            if (read_slice(&p, end, b) < 0) return BAIL;
            hb = 1;
        } else {
            return BAIL;
        }
    }
    if (!(ha && hb) || !is_ascii(*a) || !is_ascii(*b)) return BAIL;
    return OK;
}

/* LongProperty: 1 name (ASCII string), 2 value (int64), both required. */
static int parse_long_property(Slice s, Slice *name, int64_t *value) {
    const uint8_t *p = s.p, *end = s.p + s.n;
    int hn = 0, hv = 0;
    while (p < end) {
        uint64_t key, v;
        NEXT_KEY(p, end, key);
        if (key == ((1 << 3) | 2)) {
            if (read_slice(&p, end, name) < 0) return BAIL;
            hn = 1;
        } else if (key == ((2 << 3) | 0)) {
            if (read_varint(&p, end, &v) < 0) return BAIL;
            *value = (int64_t)v;
            hv = 1;
        } else {
            return BAIL;
        }
    }
    return (hn && hv && is_ascii(*name)) ? OK : BAIL;
}

/* OffloadDriverMetadata: 1 name (required string), 2 properties (KeyValue). Validated, not returned. */
static int check_driver(Slice s) {
    const uint8_t *p = s.p, *end = s.p + s.n;
    int has_name = 0;
    while (p < end) {
        uint64_t key;
        Slice x, k, v;
        NEXT_KEY(p, end, key);
        if ((key & 7) != 2 || read_slice(&p, end, &x) < 0) return BAIL;
        if (key == ((1 << 3) | 2)) {
            if (!is_ascii(x)) return BAIL;
            has_name = 1;
        } else if (key == ((2 << 3) | 2)) {
            if (parse_str_pair(x, &k, &v) != OK) return BAIL;
        } else {
            return BAIL;
        }
    }
    return has_name ? OK : BAIL;
}

typedef struct {
    int complete, bk_deleted, has_ts;
    int64_t ts;
} Offload;

/* OffloadContext (segment = 0): 1 uidMsb, 2 uidLsb, 3 complete, 4 bookkeeperDeleted, 5 timestamp,
 * 6 driverMetadata (once), 7 offloadSegment (repeated; validated, not returned).
 * OffloadSegment (segment = 1): 1-6 varints (uids, complete, timestamps, endEntryId), 7 driverMetadata (once). */
static int parse_offload(Slice s, Offload *o, int segment) {
    const uint8_t *p = s.p, *end = s.p + s.n;
    const uint32_t last_varint = segment ? 6 : 5, driver = segment ? 7 : 6;
    int has_driver = 0;
    while (p < end) {
        uint64_t key, v;
        NEXT_KEY(p, end, key);
        uint32_t field = (uint32_t)(key >> 3), wire = (uint32_t)(key & 7);
        if (wire == 0 && field >= 1 && field <= last_varint) {
            if (read_varint(&p, end, &v) < 0) return BAIL;
            if (segment) continue;
            if (field == 3) o->complete = v != 0;
            if (field == 4) o->bk_deleted = v != 0;
            if (field == 5) {
                o->ts = (int64_t)v;
                o->has_ts = 1;
            }
            continue;
        }
        Slice x;
        if (wire != 2 || read_slice(&p, end, &x) < 0) return BAIL;
        if (field == driver) {
            if (has_driver || check_driver(x) != OK) return BAIL;
            has_driver = 1;
        } else if (field == 7 && !segment) {
            Offload ignored = {0, 0, 0, 0};
            if (parse_offload(x, &ignored, 1) != OK) return BAIL;
        } else {
            return BAIL;
        }
    }
    return OK;
}

/* ManagedLedgerInfo.LedgerInfo -> (ledgerId, entries, size, timestamp, offloaded, bookkeeper_deleted,
 * offload_timestamp) as managed_ledger_fields gives it. */
static int ledger_info_row(Slice s, PyObject **row) {
    const uint8_t *p = s.p, *end = s.p + s.n;
    int has[5] = {0, 0, 0, 0, 0};
    int64_t val[5] = {0, 0, 0, 0, 0};
    int has_offload = 0;
    Offload o = {0, 0, 0, 0};
    while (p < end) {
        uint64_t key, v;
        NEXT_KEY(p, end, key);
        uint32_t field = (uint32_t)(key >> 3), wire = (uint32_t)(key & 7);
        if (wire == 0 && field >= 1 && field <= 4) {
            if (read_varint(&p, end, &v) < 0) return BAIL;
            has[field] = 1;
            val[field] = (int64_t)v;
        } else if (wire == 2 && field == 5) {
            Slice x;
            if (has_offload || read_slice(&p, end, &x) < 0 || parse_offload(x, &o, 0) != OK) return BAIL;
            has_offload = 1;
        } else if (wire == 2 && field == 6) {
            Slice x, k, v2;
            if (read_slice(&p, end, &x) < 0 || parse_str_pair(x, &k, &v2) != OK) return BAIL;
        } else {
            return BAIL;
        }
    }
    if (!has[1]) return BAIL;
    PyObject *t = Py_BuildValue(
        "(LNNNOON)", (long long)val[1], int_or_none(has[2], val[2]), int_or_none(has[3], val[3]),
        int_or_none(has[4], val[4]), o.complete ? Py_True : Py_False, o.bk_deleted ? Py_True : Py_False,
        int_or_none(has_offload && o.has_ts, o.ts));
    if (!t) return FAIL;
    *row = t;
    return OK;
}

/* A legacy text ManagedLedgerInfo (what the broker's TextFormat fallback reads; formats.managed_ledger
 * _decode_plain: binary first, which text starting with "ledgerInfo" never is, its first byte being an end-group
 * tag) in the shape TextFormat prints it: "ledgerInfo {" blocks of ledgerId (required), entries, size and
 * timestamp lines, each at most once, decimal without leading zeros, printable ASCII only. At least one block;
 * anything else (an offload context, properties, a terminated position, comments, other spellings) is BAIL:
 * Python's text_format decides. Rows as ledger_info_row gives them. */
static int append_new(PyObject *list, PyObject *item);

static int ml_text_parse(const uint8_t *p, const uint8_t *end, PyObject *rows) {
    static const char *names[4] = {"ledgerId", "entries", "size", "timestamp"};
    for (const uint8_t *q = p; q < end; q++) {
        uint8_t c = *q;
        if (c != '\n' && (c < 0x20 || c > 0x7E || c == '\\' || c == '#' || c == '\'' || c == '"')) return BAIL;
    }
    int nested = 0;
    int has[4] = {0, 0, 0, 0};
    int64_t val[4] = {0, 0, 0, 0};
    while (p < end) {
        const uint8_t *ls, *le;
        p = trimmed_line(p, end, &ls, &le);
        if (ls == le) continue;
        if (!nested) {
            if (!v2_is(ls, le, "ledgerInfo {")) return BAIL;
            nested = 1;
            memset(has, 0, sizeof has);
            continue;
        }
        if (le - ls == 1 && *ls == '}') {
            if (!has[0]) return BAIL;
            PyObject *t = Py_BuildValue("(LNNNOOO)", (long long)val[0], int_or_none(has[1], val[1]),
                                        int_or_none(has[2], val[2]), int_or_none(has[3], val[3]), Py_False,
                                        Py_False, Py_None);
            if (!t || append_new(rows, t) != OK) return FAIL;
            nested = 0;
            continue;
        }
        const uint8_t *sep = field_sep(ls, le);
        if (!sep) return BAIL;
        int k = 0;
        while (k < 4 && !v2_is(ls, sep, names[k])) k++;
        if (k == 4 || has[k] || v2_int(sep + 2, le, INT64_MIN, INT64_MAX, &val[k]) < 0) return BAIL;
        has[k] = 1;
    }
    if (nested || PyList_GET_SIZE(rows) == 0) return BAIL;
    return OK;
}

static PyObject *str_pair(Slice a, Slice b) {
    PyObject *x = str_of(a), *y = str_of(b);
    if (!x || !y) {
        Py_XDECREF(x);
        Py_XDECREF(y);
        return NULL;
    }
    return Py_BuildValue("(NN)", x, y);
}

static int append_new(PyObject *list, PyObject *item) {
    if (!item) return FAIL;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc < 0 ? FAIL : OK;
}

/* A field the message does not define: protobuf keeps it aside and parses on (a varint, fixed64, length-delimited
 * or fixed32 value); field 0, groups and invalid wire types are BAIL (Python decides). */
static int skip_unknown(const uint8_t **pp, const uint8_t *end, uint32_t field, uint32_t wire) {
    uint64_t v;
    Slice s;
    if (field == 0) return BAIL;
    switch (wire) {
        case 0: return read_varint(pp, end, &v) < 0 ? BAIL : OK;
        case 1:
            if (end - *pp < 8) return BAIL;
            *pp += 8;
            return OK;
        case 2: return read_slice(pp, end, &s) < 0 ? BAIL : OK;
        case 5:
            if (end - *pp < 4) return BAIL;
            *pp += 4;
            return OK;
        default: return BAIL;
    }
}

static int ml_info_parse(const uint8_t *p, const uint8_t *end, PyObject *rows, PyObject *props, int *terminated) {
    while (p < end) {
        uint64_t key;
        Slice x;
        NEXT_KEY(p, end, key);
        uint32_t field = (uint32_t)(key >> 3);
        if (field == 0 || field > 3) { /* ManagedLedgerInfo defines 1-3 */
            if (skip_unknown(&p, end, field, (uint32_t)(key & 7)) != OK) return BAIL;
            continue;
        }
        if ((key & 7) != 2 || read_slice(&p, end, &x) < 0) return BAIL;
        if (field == 1) {
            PyObject *row = NULL;
            int rc = ledger_info_row(x, &row);
            if (rc != OK) return rc;
            if (append_new(rows, row) != OK) return FAIL;
        } else if (field == 2) {
            int64_t lid, eid;
            if (*terminated || parse_position(x, &lid, &eid) != OK) return BAIL;
            *terminated = 1;
        } else if (field == 3) {
            Slice k, v;
            if (parse_str_pair(x, &k, &v) != OK) return BAIL;
            if (append_new(props, str_pair(k, v)) != OK) return FAIL;
        } else {
            return BAIL;
        }
    }
    return OK;
}

static PyObject *ml_info(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg)) Py_RETURN_NONE;
    const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    PyObject *rows = PyList_New(0), *props = PyList_New(0), *out = NULL;
    int terminated = 0;
    if (!rows || !props) goto done;
    int rc = ml_info_parse(p, p + n, rows, props, &terminated);
    if (rc == FAIL) goto done;
    if (rc == BAIL || (PyList_GET_SIZE(rows) == 0 && !terminated && PyList_GET_SIZE(props) == 0)) {
        out = Py_None; /* nothing known parsed: the Python path decides (text format, garbage, ...) */
        Py_INCREF(out);
        goto done;
    }
    PyObject *ptuple = PyList_AsTuple(props);
    if (!ptuple) goto done;
    out = Py_BuildValue("(OON)", rows, terminated ? Py_True : Py_False, ptuple);
done:
    Py_XDECREF(rows);
    Py_XDECREF(props);
    return out;
}

static int cursor_parse(const uint8_t *p, const uint8_t *end, int64_t *scalars, int *has, PyObject *ranges,
                        PyObject *lprops, PyObject *sprops, long *batched) {
    while (p < end) {
        uint64_t key, v;
        NEXT_KEY(p, end, key);
        uint32_t field = (uint32_t)(key >> 3), wire = (uint32_t)(key & 7);
        if (wire == 0 && (field == 1 || field == 2 || field == 3 || field == 6)) {
            if (read_varint(&p, end, &v) < 0) return BAIL;
            scalars[field] = (int64_t)v;
            has[field] = 1;
            continue;
        }
        if (field == 0 || field > 8) { /* ManagedCursorInfo defines 1-8 */
            if (skip_unknown(&p, end, field, wire) != OK) return BAIL;
            continue;
        }
        Slice x;
        if (wire != 2 || read_slice(&p, end, &x) < 0) return BAIL;
        if (field == 4) { /* MessageRange: lowerEndpoint, upperEndpoint (each required, once) */
            const uint8_t *q = x.p, *qend = x.p + x.n;
            int hl = 0, hu = 0;
            int64_t ll = 0, le = 0, ul = 0, ue = 0;
            while (q < qend) {
                uint64_t k2;
                Slice y;
                NEXT_KEY(q, qend, k2);
                if (read_slice(&q, qend, &y) < 0) return BAIL;
                if (k2 == ((1 << 3) | 2) && !hl) {
                    if (parse_position(y, &ll, &le) != OK) return BAIL;
                    hl = 1;
                } else if (k2 == ((2 << 3) | 2) && !hu) {
                    if (parse_position(y, &ul, &ue) != OK) return BAIL;
                    hu = 1;
                } else {
                    return BAIL;
                }
            }
            if (!(hl && hu)) return BAIL;
            if (append_new(ranges, Py_BuildValue("(LLLL)", (long long)ll, (long long)le, (long long)ul,
                                                 (long long)ue)) != OK)
                return FAIL;
        } else if (field == 5) { /* LongProperty */
            Slice name = {NULL, 0};
            int64_t value = 0;
            if (parse_long_property(x, &name, &value) != OK) return BAIL;
            PyObject *ns = str_of(name);
            if (!ns) return FAIL;
            if (append_new(lprops, Py_BuildValue("(NL)", ns, (long long)value)) != OK) return FAIL;
        } else if (field == 7) { /* BatchedEntryDeletionIndexInfo: position (required, once), deleteSet */
            const uint8_t *q = x.p, *qend = x.p + x.n;
            int hp = 0;
            while (q < qend) {
                uint64_t k2, v2;
                NEXT_KEY(q, qend, k2);
                if (k2 == ((1 << 3) | 2) && !hp) {
                    Slice y;
                    int64_t a, b;
                    if (read_slice(&q, qend, &y) < 0 || parse_position(y, &a, &b) != OK) return BAIL;
                    hp = 1;
                } else if (k2 == ((2 << 3) | 0)) {
                    if (read_varint(&q, qend, &v2) < 0) return BAIL;
                } else if (k2 == ((2 << 3) | 2)) { /* packed */
                    Slice y;
                    if (read_slice(&q, qend, &y) < 0) return BAIL;
                    const uint8_t *r = y.p, *rend = y.p + y.n;
                    while (r < rend) {
                        if (read_varint(&r, rend, &v2) < 0) return BAIL;
                    }
                } else {
                    return BAIL;
                }
            }
            if (!hp) return BAIL;
            (*batched)++;
        } else if (field == 8) { /* StringProperty */
            Slice a, b;
            if (parse_str_pair(x, &a, &b) != OK) return BAIL;
            if (append_new(sprops, str_pair(a, b)) != OK) return FAIL;
        } else {
            return BAIL;
        }
    }
    return has[1] ? OK : BAIL;
}

/* ManagedCursorInfo -> (cursorsLedgerId, mark_delete or None, lastActive or None, ranges, batched count,
 * long properties, string properties) as cursor_fields gives them. */
static PyObject *cursor_info(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg)) Py_RETURN_NONE;
    const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    int64_t scalars[7] = {0, 0, 0, 0, 0, 0, 0};
    int has[7] = {0, 0, 0, 0, 0, 0, 0};
    long batched = 0;
    PyObject *ranges = PyList_New(0), *lprops = PyList_New(0), *sprops = PyList_New(0), *out = NULL;
    if (!ranges || !lprops || !sprops) goto done;
    int rc = cursor_parse(p, p + n, scalars, has, ranges, lprops, sprops, &batched);
    if (rc == FAIL) goto done;
    if (rc == BAIL) {
        out = Py_None;
        Py_INCREF(out);
        goto done;
    }
    PyObject *md;
    if (has[2] && has[3]) {
        md = Py_BuildValue("(LL)", (long long)scalars[2], (long long)scalars[3]);
    } else {
        md = Py_None;
        Py_INCREF(md);
    }
    PyObject *lt = PyList_AsTuple(lprops), *st = PyList_AsTuple(sprops);
    if (!md || !lt || !st) {
        Py_XDECREF(md);
        Py_XDECREF(lt);
        Py_XDECREF(st);
        goto done;
    }
    out = Py_BuildValue("(LNNOlNN)", (long long)scalars[1], md, int_or_none(has[6], scalars[6]), ranges, batched, lt,
                        st);
done:
    Py_XDECREF(ranges);
    Py_XDECREF(lprops);
    Py_XDECREF(sprops);
    return out;
}


/* ---- the znodes row ------------------------------------------------------------------------------------------
 * znode_row(store, path, stat, kind, decode_error, sha) -> the 19-tuple of scrape.extract.znode_row_with_sha:
 * (store, path, parent, name, depth, version, cversion, aversion, czxid, mzxid, pzxid, ctime, mtime,
 *  data_length, num_children, ephemeral_owner, sha, kind, decode_error), stat in kazoo ZnodeStat order
 * (czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner, dataLength, numChildren, pzxid).
 * Anything but a str path and an 11-tuple stat is a TypeError; the Python twin is the reference. */
static PyObject *SLASH;
static PyObject *EMPTY;

static PyObject *znode_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "znode_row takes 6 arguments");
        return NULL;
    }
    PyObject *store = args[0], *path = args[1], *stat = args[2], *kind = args[3], *error = args[4], *sha = args[5];
    if (!PyUnicode_Check(path) || !PyTuple_Check(stat) || PyTuple_GET_SIZE(stat) != 11) {
        PyErr_SetString(PyExc_TypeError, "znode_row: path must be str and stat an 11-tuple");
        return NULL;
    }
    PyObject *parent, *name, *depth;
    Py_ssize_t n = PyUnicode_GET_LENGTH(path);
    if (PyUnicode_CompareWithASCIIString(path, "/") == 0) {
        parent = EMPTY;
        name = EMPTY;
        Py_INCREF(parent);
        Py_INCREF(name);
        depth = PyLong_FromLong(0);
    } else {
        Py_ssize_t cut = PyUnicode_FindChar(path, '/', 0, n, -1);
        if (cut == -2) return NULL;
        /* path[:cut] or "/" (cut == -1: path[:-1], as Python slices) */
        Py_ssize_t end = cut >= 0 ? cut : (n > 0 ? n - 1 : 0);
        if (end > 0) {
            parent = PyUnicode_Substring(path, 0, end);
        } else {
            parent = SLASH;
            Py_INCREF(parent);
        }
        name = PyUnicode_Substring(path, cut + 1, n);
        Py_ssize_t slashes = PyUnicode_Count(path, SLASH, 0, n);
        depth = slashes < 0 ? NULL : PyLong_FromSsize_t(slashes);
    }
    if (!parent || !name || !depth) {
        Py_XDECREF(parent);
        Py_XDECREF(name);
        Py_XDECREF(depth);
        return NULL;
    }
    PyObject *out = PyTuple_New(19);
    if (!out) {
        Py_DECREF(parent);
        Py_DECREF(name);
        Py_DECREF(depth);
        return NULL;
    }
    /* stat positions for columns version, cversion, aversion, czxid, mzxid, pzxid, ctime, mtime, data_length,
       num_children, ephemeral_owner */
    static const int from_stat[11] = {4, 5, 6, 0, 1, 10, 2, 3, 8, 9, 7};
    PyObject *head[5] = {store, path, parent, name, depth};
    for (int i = 0; i < 5; i++) {
        if (i < 2) Py_INCREF(head[i]);
        PyTuple_SET_ITEM(out, i, head[i]);
    }
    for (int i = 0; i < 11; i++) {
        PyObject *v = PyTuple_GET_ITEM(stat, from_stat[i]);
        Py_INCREF(v);
        PyTuple_SET_ITEM(out, 5 + i, v);
    }
    PyObject *tail[3] = {sha, kind, error};
    for (int i = 0; i < 3; i++) {
        Py_INCREF(tail[i]);
        PyTuple_SET_ITEM(out, 16 + i, tail[i]);
    }
    return out;
}

/* snap_nodes(buf, pos, limit): whole jute node records of a ZooKeeper snapshot stream from buf[pos:] (FileSnap /
 * DataTree.serializeNode: ustring path; DataNode {buffer data; long acl; StatPersisted stat (60 bytes)}), at most
 * limit of them: ([(path, data, stat bytes)], the position after the last whole record, whether the terminating
 * path "/" was read, and with digest the sum of the nodes' DigestCalculator CRCs). A record cut by the end of buf ends the batch there; a negative path length or a data length
 * below -1 returns None (the pure-Python reader decides, zkdata.stream.snap_nodes_py gives the same results). */
static inline int32_t be32(const uint8_t *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

/* CRC-32 (ISO-HDLC, reflected 0xEDB88320): what java.util.zip.CRC32 and zlib.crc32 compute; slicing by 8. */
static uint32_t CRC_TABLE[8][256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        CRC_TABLE[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int t = 1; t < 8; t++) CRC_TABLE[t][i] = (CRC_TABLE[t - 1][i] >> 8) ^ CRC_TABLE[0][CRC_TABLE[t - 1][i] & 0xFF];
    }
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, Py_ssize_t n) {
    crc = ~crc;
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24));
        uint32_t hi = (uint32_t)p[4] | ((uint32_t)p[5] << 8) | ((uint32_t)p[6] << 16) | ((uint32_t)p[7] << 24);
        crc = CRC_TABLE[7][lo & 0xFF] ^ CRC_TABLE[6][(lo >> 8) & 0xFF] ^ CRC_TABLE[5][(lo >> 16) & 0xFF] ^
              CRC_TABLE[4][lo >> 24] ^ CRC_TABLE[3][hi & 0xFF] ^ CRC_TABLE[2][(hi >> 8) & 0xFF] ^
              CRC_TABLE[1][(hi >> 16) & 0xFF] ^ CRC_TABLE[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n-- > 0) crc = CRC_TABLE[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

static uint32_t node_crc(const uint8_t *path, Py_ssize_t n, const uint8_t *data, Py_ssize_t d, const uint8_t *st);

/* One node record of a snapshot at buf[pos:end] (DataTree.serialize: int32 path length, path, int32 data length
 * (-1: null), data, int64 acl, 60-byte StatPersisted); the path "/" ends the nodes. REC_NODE sets the path length
 * n, the data length d and the record's size. */
enum { REC_SHORT = 0, REC_NODE = 1, REC_END = 2, REC_BAD = -1 };

static inline int snap_record(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, int32_t *n, Py_ssize_t *d,
                              Py_ssize_t *size) {
    if (end - pos < 4) return REC_SHORT;
    *n = be32(buf + pos);
    if (*n < 0) return REC_BAD;
    if (end - pos - 4 < *n) return REC_SHORT;
    if (*n == 1 && buf[pos + 4] == '/') return REC_END;
    if (end - pos - 4 - *n < 4) return REC_SHORT;
    int32_t dn = be32(buf + pos + 4 + *n);
    if (dn < -1) return REC_BAD;
    *d = dn > 0 ? dn : 0;
    *size = 4 + (Py_ssize_t)*n + 4 + *d + 8 + 60;
    return end - pos < *size ? REC_SHORT : REC_NODE;
}

/* A node's share of the snapshot's digest, its record's path at p: DigestCalculator.calculateDigest (path, data,
 * then czxid mzxid pzxid ctime mtime version cversion aversion ephemeralOwner; StatPersisted stores czxid mzxid
 * ctime mtime version cversion aversion ephemeralOwner pzxid); /zookeeper/ nodes count nothing. */
static inline uint32_t node_digest(const uint8_t *p, int32_t n, Py_ssize_t d) {
    if (n >= 11 && memcmp(p, "/zookeeper/", 11) == 0) return 0;
    return node_crc(p, n, p + n + 4, d, p + n + 4 + d + 8);
}

static PyObject *snap_nodes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "snap_nodes(buf: bytes, pos: int, limit: int, digest: bool)");
        return NULL;
    }
    int with_digest = PyObject_IsTrue(args[3]);
    if (with_digest < 0) return NULL;
    uint64_t digest = 0;
    const uint8_t *buf = (const uint8_t *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t end = PyBytes_GET_SIZE(args[0]);
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t limit = PyLong_AsSsize_t(args[2]);
    if ((pos == -1 || limit == -1) && PyErr_Occurred()) return NULL;
    if (pos < 0 || pos > end) Py_RETURN_NONE;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    int done = 0;
    while (PyList_GET_SIZE(out) < limit) {
        int32_t n;
        Py_ssize_t d, size;
        int rec = snap_record(buf, pos, end, &n, &d, &size);
        if (rec == REC_SHORT) break;
        if (rec == REC_BAD) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        if (rec == REC_END) {
            pos += 5;
            done = 1;
            break;
        }
        const uint8_t *p = buf + pos + 4;
        if (with_digest) digest += node_digest(p, n, d);
        PyObject *path = PyUnicode_DecodeUTF8((const char *)p, n, "surrogateescape");
        if (!path) {
            Py_DECREF(out);
            return NULL;
        }
        p += n + 4;
        PyObject *data = PyBytes_FromStringAndSize((const char *)p, d);
        PyObject *stat = PyBytes_FromStringAndSize((const char *)p + d + 8, 60);
        PyObject *t = (data && stat) ? PyTuple_Pack(3, path, data, stat) : NULL;
        Py_DECREF(path);
        Py_XDECREF(data);
        Py_XDECREF(stat);
        if (!t || PyList_Append(out, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(t);
        pos += size;
    }
    return Py_BuildValue("(NnOK)", out, pos, done ? Py_True : Py_False, (unsigned long long)digest);
}


/* ---- SHA-256 (FIPS 180-4): the znodes' data_sha256, as hashlib.sha256(data).hexdigest() gives it --------------- */

static const uint32_t SHA_K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROTR32(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROTR32(w[i - 15], 7) ^ ROTR32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROTR32(w[i - 2], 17) ^ ROTR32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ROTR32(e, 6) ^ ROTR32(e, 11) ^ ROTR32(e, 25)) + ((e & f) ^ (~e & g)) + SHA_K[i] + w[i];
        uint32_t t2 = (ROTR32(a, 2) ^ ROTR32(a, 13) ^ ROTR32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

static void sha256_blocks_c(uint32_t h[8], const uint8_t *p, size_t nblocks) {
    for (size_t i = 0; i < nblocks; i++) sha256_block(h, p + 64 * i);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define SHA_NI_TARGET __attribute__((target("sha,sse4.1,ssse3")))

/* The same blocks with the x86 SHA extensions (sha256rnds2 / sha256msg1 / sha256msg2): the state is kept as
 * ABEF / CDGH, as those instructions take it; each 4-round group adds its message words and constants. */
SHA_NI_TARGET static void sha256_blocks_ni(uint32_t h[8], const uint8_t *p, size_t nblocks) {
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); /* CDAB */
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B);  /* EFGH */
    __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);                                       /* ABEF */
    s1 = _mm_blend_epi16(s1, tmp, 0xF0);                                            /* CDGH */
    for (size_t b = 0; b < nblocks; b++, p += 64) {
        __m128i abef = s0, cdgh = s1, w[4];
        for (int i = 0; i < 16; i++) {
            __m128i m;
            if (i < 4) {
                m = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), swap);
            } else {
                m = _mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]);
                m = _mm_add_epi32(m, _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4));
                m = _mm_sha256msg2_epu32(m, w[(i + 3) & 3]);
            }
            w[i & 3] = m;
            m = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)&SHA_K[4 * i]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, m);
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0E));
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }
    tmp = _mm_shuffle_epi32(s0, 0x1B);                                   /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);                                    /* DCHG */
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(tmp, s1, 0xF0)); /* DCBA */
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(s1, tmp, 8));    /* HGFE */
}

static int sha_ni_available(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 19)) || !(c & (1u << 9))) return 0; /* SSE4.1, SSSE3 */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b >> 29) & 1; /* SHA */
}
#else
static int sha_ni_available(void) { return 0; }
#define sha256_blocks_ni sha256_blocks_c
#endif

/* chosen once at import: the SHA extensions when the CPU has them (PULSAR_OPS_NATIVE_SHA=c forces the C rounds) */
static void (*sha256_blocks)(uint32_t h[8], const uint8_t *p, size_t nblocks) = sha256_blocks_c;

/* The 64 lower-case hex digits of SHA-256(p[0:n]) into out. */
static void sha256_hex(const uint8_t *p, size_t n, char out[64]) {
    static const char hex[] = "0123456789abcdef";
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    size_t i = n / 64 * 64;
    if (i) sha256_blocks(h, p, n / 64);
    uint8_t tail[128];
    size_t r = n - i;
    memcpy(tail, p + i, r);
    tail[r] = 0x80;
    size_t tn = r + 1 + 8 <= 64 ? 64 : 128;
    memset(tail + r + 1, 0, tn - r - 1);
    uint64_t bits = (uint64_t)n * 8;
    for (int j = 0; j < 8; j++) tail[tn - 1 - j] = (uint8_t)(bits >> (8 * j));
    sha256_blocks(h, tail, tn / 64);
    for (int j = 0; j < 8; j++) {
        for (int b = 0; b < 4; b++) {
            uint8_t x = (uint8_t)(h[j] >> (24 - 8 * b));
            out[8 * j + 2 * b] = hex[x >> 4];
            out[8 * j + 2 * b + 1] = hex[x & 15];
        }
    }
}

/* ---- adler32: zlib.adler32, vectorised ------------------------------------------------------------------------
 *
 * adler32(data, value=1) -> int: exactly zlib.adler32 (RFC 1950: a = 1 + the bytes, b = the sum of the a's, both mod
 * 65521; the result b << 16 | a). The offline scrape checksums every byte of the snapshot (its seals) and of each
 * transaction log it reads (each record's checksum, ZooKeeper's FileTxnIterator): 2.3 GB at 600,000 topics, where
 * zlib's scalar loop runs ~2 GB/s. With AVX2 a 32-byte block takes one SAD (the a part) and one multiply-add by the
 * weights 32..1 (the b part), reduced mod 65521 every NMAX bytes as zlib does. Equal to zlib.adler32 for every input
 * (tests/unit/test_native.py). */

#define ADLER_BASE 65521u
#define ADLER_NMAX 5552 /* the largest n with 255 n (n+1) / 2 + (n+1) (BASE-1) <= 2^32 - 1 (zlib) */

static uint32_t adler32_c(uint32_t adler, const uint8_t *p, size_t n) {
    uint32_t a = adler & 0xFFFF, b = adler >> 16;
    while (n) {
        size_t k = n < ADLER_NMAX ? n : ADLER_NMAX;
        n -= k;
        while (k--) {
            a += *p++;
            b += a;
        }
        a %= ADLER_BASE;
        b %= ADLER_BASE;
    }
    return b << 16 | a;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) static uint32_t adler32_avx2(uint32_t adler, const uint8_t *p, size_t n) {
    uint32_t a = adler & 0xFFFF, b = adler >> 16;
    const __m256i weights = _mm256_setr_epi8(32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15,
                                             14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i zero = _mm256_setzero_si256();
    while (n >= 32) {
        size_t k = n < ADLER_NMAX ? n : ADLER_NMAX;
        k -= k % 32;
        n -= k;
        const uint64_t run = k;
        /* per block of 32 bytes: b += 32 a + sum (32 - i) d[i], a += sum d[i]; the lanes hold the sums of this run
           with a counted from 0 (vprev: the a before each block), the run's first a added as run * a below */
        __m256i va = zero, vb = zero, vprev = zero;
        for (; k; k -= 32, p += 32) {
            __m256i d = _mm256_loadu_si256((const __m256i *)p);
            vprev = _mm256_add_epi32(vprev, va);
            va = _mm256_add_epi32(va, _mm256_sad_epu8(d, zero));
            vb = _mm256_add_epi32(vb, _mm256_madd_epi16(_mm256_maddubs_epi16(d, weights), ones));
        }
        uint32_t la[8], lb[8], lp[8];
        _mm256_storeu_si256((__m256i *)la, va);
        _mm256_storeu_si256((__m256i *)lb, vb);
        _mm256_storeu_si256((__m256i *)lp, vprev);
        uint64_t sa = 0, sb = 0, sp = 0;
        for (int i = 0; i < 8; i++) {
            sa += la[i];
            sb += lb[i];
            sp += lp[i];
        }
        b = (uint32_t)((b + run * a + 32 * sp + sb) % ADLER_BASE);
        a = (uint32_t)((a + sa) % ADLER_BASE);
    }
    return adler32_c(b << 16 | a, p, n);
}
#endif

static uint32_t (*adler32_impl)(uint32_t, const uint8_t *, size_t) = adler32_c;

/* ---- CRC-32 by carry-less multiplication: the snapshot nodes' digest (DigestCalculator) ----------------------
 *
 * The per-node digest is a CRC-32 (ISO-HDLC, zlib.crc32's) over ~300 bytes a node, every node of the snapshot:
 * slicing by 8 took ~1.3 cycles a byte, a quarter of pass 1. With PCLMULQDQ the bytes are folded 64 then 16 at a
 * time and Barrett-reduced (Gopal et al., "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
 * Instruction", Intel 2009: the bit-reflected constants for the CRC-32 polynomial, as zlib's x86 SIMD variant and
 * Chromium's crc32_simd use them), the tail (< 16 bytes) by the table. Equal to zlib.crc32 for every input
 * (tests/unit/test_native.py). PULSAR_OPS_NATIVE_CRC=c keeps the table. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* crc: the running CRC inverted (~crc), as the folding takes it; n >= 64, a multiple of 16; returns it inverted */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc_fold(const uint8_t *buf, size_t len, uint32_t crc) {
    const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596LL, 0x0154442bd4LL);
    const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009eLL, 0x01751997d0LL);
    const __m128i k5k0 = _mm_set_epi64x(0, 0x0163cd6124LL);
    const __m128i poly = _mm_set_epi64x(0x01f7011641LL, 0x01db710641LL);
    __m128i x0, x1, x2, x3, x4, x5, x6, x7, x8;
    x1 = _mm_loadu_si128((const __m128i *)(buf + 0x00));
    x2 = _mm_loadu_si128((const __m128i *)(buf + 0x10));
    x3 = _mm_loadu_si128((const __m128i *)(buf + 0x20));
    x4 = _mm_loadu_si128((const __m128i *)(buf + 0x30));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
    x0 = k1k2;
    buf += 64;
    len -= 64;
    while (len >= 64) { /* four lanes folded 512 bits ahead */
        x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x6 = _mm_clmulepi64_si128(x2, x0, 0x00);
        x7 = _mm_clmulepi64_si128(x3, x0, 0x00);
        x8 = _mm_clmulepi64_si128(x4, x0, 0x00);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
        x2 = _mm_clmulepi64_si128(x2, x0, 0x11);
        x3 = _mm_clmulepi64_si128(x3, x0, 0x11);
        x4 = _mm_clmulepi64_si128(x4, x0, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), _mm_loadu_si128((const __m128i *)(buf + 0x00)));
        x2 = _mm_xor_si128(_mm_xor_si128(x2, x6), _mm_loadu_si128((const __m128i *)(buf + 0x10)));
        x3 = _mm_xor_si128(_mm_xor_si128(x3, x7), _mm_loadu_si128((const __m128i *)(buf + 0x20)));
        x4 = _mm_xor_si128(_mm_xor_si128(x4, x8), _mm_loadu_si128((const __m128i *)(buf + 0x30)));
        buf += 64;
        len -= 64;
    }
    x0 = k3k4; /* the four lanes into one */
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x3), x5);
    x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x4), x5);
    while (len >= 16) { /* then 128 bits at a time */
        x2 = _mm_loadu_si128((const __m128i *)buf);
        x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
        buf += 16;
        len -= 16;
    }
    /* 128 bits to 64, then Barrett to 32 */
    x2 = _mm_clmulepi64_si128(x1, x0, 0x10);
    x3 = _mm_setr_epi32(~0, 0, ~0, 0);
    x1 = _mm_srli_si128(x1, 8);
    x1 = _mm_xor_si128(x1, x2);
    x0 = k5k0;
    x2 = _mm_srli_si128(x1, 4);
    x1 = _mm_and_si128(x1, x3);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    x0 = poly;
    x2 = _mm_and_si128(x1, x3);
    x2 = _mm_clmulepi64_si128(x2, x0, 0x10);
    x2 = _mm_and_si128(x2, x3);
    x2 = _mm_clmulepi64_si128(x2, x0, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}
#endif

static int CRC_FOLD = 0; /* the CPU has PCLMULQDQ (and SSE4.1) */

/* zlib.crc32(p[:n], crc) */
static uint32_t crc_any(uint32_t crc, const uint8_t *p, Py_ssize_t n) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (CRC_FOLD && n >= 64) {
        size_t chunk = (size_t)n & ~(size_t)15;
        crc = ~crc_fold(p, chunk, ~crc);
        p += chunk;
        n -= (Py_ssize_t)chunk;
    }
#endif
    return crc_update(crc, p, n);
}

/* the first n bytes of src to dst, 16 at a time: may read and write up to 15 bytes past n (the caller's dst has
 * room; its src is followed by more of the same record). A small variable-size memcpy inlines as rep movsq, whose
 * start-up cost was most of node_crc. */
static inline void copy16(uint8_t *dst, const uint8_t *src, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i += 16) {
        uint64_t a, b;
        memcpy(&a, src + i, 8);
        memcpy(&b, src + i + 8, 8);
        memcpy(dst + i, &a, 8);
        memcpy(dst + i + 8, &b, 8);
    }
}

/* DigestCalculator.calculateDigest of one node: path, data, then czxid mzxid pzxid ctime mtime version cversion
 * aversion ephemeralOwner (StatPersisted stores czxid mzxid ctime mtime version cversion aversion ephemeralOwner
 * pzxid); in one run of bytes when it is small, so most of it folds. path and data are a snapshot node record's
 * (each followed by at least 68 more bytes of it: copy16 may read 15 past them). */
static uint32_t node_crc(const uint8_t *path, Py_ssize_t n, const uint8_t *data, Py_ssize_t d, const uint8_t *st) {
    uint8_t tmp[1024 + 16];
    if (n + d + 60 <= 1024) {
        copy16(tmp, path, n);
        copy16(tmp + n, data, d);
        uint8_t *s = tmp + n + d;
        memcpy(s, st, 16);
        memcpy(s + 16, st + 52, 8);
        memcpy(s + 24, st + 16, 36);
        return crc_any(0, tmp, n + d + 60);
    }
    uint32_t c = crc_any(0, path, n);
    c = crc_any(c, data, d);
    c = crc_update(c, st, 16);
    c = crc_update(c, st + 52, 8);
    return crc_update(c, st + 16, 36);
}

static PyObject *py_crc32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "crc32(data, value=0)");
        return NULL;
    }
    unsigned long v = 0;
    if (nargs == 2) {
        v = PyLong_AsUnsignedLongMask(args[1]);
        if (v == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    }
    Py_buffer b;
    if (PyObject_GetBuffer(args[0], &b, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t r = crc_any((uint32_t)v, (const uint8_t *)b.buf, b.len);
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLong(r);
}

static PyObject *py_adler32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "adler32(data, value=1)");
        return NULL;
    }
    uint32_t value = 1;
    if (nargs == 2) {
        unsigned long v = PyLong_AsUnsignedLongMask(args[1]); /* zlib.adler32 takes the value mod 2^32 too */
        if (v == (unsigned long)-1 && PyErr_Occurred()) return NULL;
        value = (uint32_t)v;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t r;
    if (view.len > 65536) {
        Py_BEGIN_ALLOW_THREADS
        r = adler32_impl(value, (const uint8_t *)view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        r = adler32_impl(value, (const uint8_t *)view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(r);
}

/* sha256_hex(data: bytes) -> str: hashlib.sha256(data).hexdigest(), natively (what the batches write). */
static PyObject *py_sha256_hex(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    char out[64];
    sha256_hex((const uint8_t *)view.buf, (size_t)view.len, out);
    PyBuffer_Release(&view);
    return PyUnicode_DecodeASCII(out, 64, NULL);
}


/* ---- bk_batch: a chunk of reads -> Arrow column buffers of the znodes and bk_ledgers tables -------------------
 *
 * bk_batch(store, reads, ledgers_root, max_bytes, znodes_spec, bk_spec)
 *   -> (n, rest, znodes_columns, bk_ledgers_columns, min_mzxid, max_mzxid)
 *
 * reads: a list of (path: str, data: bytes, stat: 11-tuple). The reads this function takes are the hierarchical
 * ledger znodes -- <ledgers_root>/DD/DDDD/LDDDD (legacy) and <ledgers_root>/DDD/DDDD/DDDD/DDDD/LDDDD (long, the
 * id <= 2^63-1) -- within the decode limit whose value bk_ledger takes and whose row values all fit their
 * columns: for each, exactly the znodes row (znode_row, kind "bk-ledger", no decode error) and the bk_ledgers row
 * scrape.extract_fast._bk_ledger builds, appended to Arrow buffers. Every other read's index goes to ``rest``,
 * for the caller's per-znode path (which decides everything this one does not: classification of other kinds,
 * flat ledgers, other formats, errors). So it never decides an error either. A spec is one letter per column:
 * q int64, i int32, s string, l list<string>; upper case when the column is nullable. Each column comes back as
 * (null_count, validity bitmap bytes or None, buffers...): int -> (values,), string -> (offsets int32, data),
 * list<string> -> (offsets int32, child count, child offsets int32, child data). The Python side
 * (scrape.native_batch) turns them into Arrow arrays without copying. */

typedef struct {
    char type;     /* q i s l */
    int nullable;
    int has_valid; /* the validity bitmap is built (from the first null on: Arrow takes none without nulls) */
    Py_ssize_t n, nulls, child_n;
    Buf valid, values, offsets, child_offsets, child_data;
} Col;

static int col_init(Col *c, char spec) {
    memset(c, 0, sizeof *c);
    c->nullable = spec >= 'A' && spec <= 'Z';
    c->type = (char)(c->nullable ? spec - 'A' + 'a' : spec);
    if (c->type != 'q' && c->type != 'i' && c->type != 's' && c->type != 'l' && c->type != 'b') return -1;
    int32_t zero = 0;
    if (c->type == 's' || c->type == 'l') {
        if (buf_put(&c->offsets, (const char *)&zero, 4) < 0) return -1;
    }
    if (c->type == 'l' && buf_put(&c->child_offsets, (const char *)&zero, 4) < 0) return -1;
    return 0;
}

static void col_free(Col *c) {
    free(c->valid.buf);
    free(c->values.buf);
    free(c->offsets.buf);
    free(c->child_offsets.buf);
    free(c->child_data.buf);
}

static inline __attribute__((always_inline)) int put_i32(Buf *b, int64_t v) {
    int32_t x = (int32_t)v;
    return buf_put(b, (const char *)&x, 4);
}

/* The first null of a column: its validity bitmap so far (every earlier value valid), ceil(n / 8) bytes. */
static int col_valid_start(Col *c) {
    size_t full = (size_t)c->n >> 3, rem = (size_t)c->n & 7;
    if (buf_reserve(&c->valid, full + 1) < 0) return -1;
    memset(c->valid.buf, 0xFF, full);
    c->valid.len = full;
    if (rem) c->valid.buf[c->valid.len++] = (char)((1 << rem) - 1);
    c->has_valid = 1;
    return 0;
}

/* The validity bit of the next value (and, for a bool column, its value bit: set with col_bit). The bitmap is
 * only built from a column's first null on (most columns have none: Arrow then takes no bitmap). */
static inline __attribute__((always_inline)) int col_valid(Col *c, int isnull) {
    if ((c->n & 7) == 0 && c->type == 'b' && buf_put(&c->values, "\0", 1) < 0) return -1;
    if (!c->has_valid) {
        if (!isnull) {
            c->n++;
            return 0;
        }
        if (col_valid_start(c) < 0) return -1;
    }
    if ((c->n & 7) == 0 && buf_put(&c->valid, "\0", 1) < 0) return -1;
    if (isnull) {
        c->nulls++;
    } else {
        c->valid.buf[c->n >> 3] |= (char)(1 << (c->n & 7));
    }
    c->n++;
    return 0;
}

static int col_bool(Col *c, int v) {
    if (col_valid(c, 0) < 0) return -1;
    if (v) c->values.buf[(c->n - 1) >> 3] |= (char)(1 << ((c->n - 1) & 7));
    return 0;
}

/* A non-null int64 / int32 value (the caller checked an int32 column's range). */
static inline __attribute__((always_inline)) int col_int(Col *c, int64_t v) {
    if (col_valid(c, 0) < 0) return -1;
    if (c->type == 'q') return buf_put(&c->values, (const char *)&v, 8);
    return put_i32(&c->values, v);
}

static int col_opt_int(Col *c, int has, int64_t v) {
    if (has) return col_int(c, v);
    if (col_valid(c, 1) < 0) return -1;
    int64_t zero = 0;
    if (c->type == 'q') return buf_put(&c->values, (const char *)&zero, 8);
    return put_i32(&c->values, 0);
}

/* A non-null string column value, the concatenation of up to three pieces. */
static inline __attribute__((always_inline)) int col_str3(Col *c, const char *a, size_t an, const char *b, size_t bn, const char *d, size_t dn) {
    if (col_valid(c, 0) < 0) return -1;
    if (buf_put(&c->values, a, an) < 0 || (bn && buf_put(&c->values, b, bn) < 0) ||
        (dn && buf_put(&c->values, d, dn) < 0))
        return -1;
    if (c->values.len > INT32_MAX) return -1;
    return put_i32(&c->offsets, (int64_t)c->values.len);
}

static inline __attribute__((always_inline)) int col_str(Col *c, const char *a, size_t an) { return col_str3(c, a, an, NULL, 0, NULL, 0); }

/* Append a value that fits the column (None only to a nullable one). */
static int col_append(Col *c, PyObject *v) {
    int isnull = v == Py_None;
    if (c->type == 'b') {
        if (isnull) return col_valid(c, 1);
        return col_bool(c, v == Py_True);
    }
    if (col_valid(c, isnull) < 0) return -1;
    switch (c->type) {
    case 'q': {
        int64_t x = isnull ? 0 : (int64_t)PyLong_AsLongLong(v);
        return buf_put(&c->values, (const char *)&x, 8);
    }
    case 'i':
        return put_i32(&c->values, isnull ? 0 : PyLong_AsLongLong(v));
    case 's': {
        if (!isnull) {
            Py_ssize_t n;
            const char *s = PyUnicode_AsUTF8AndSize(v, &n);
            if (!s || buf_put(&c->values, s, (size_t)n) < 0) return -1;
        }
        if (c->values.len > INT32_MAX) return -1;
        return put_i32(&c->offsets, (int64_t)c->values.len);
    }
    default: /* 'l' */
        if (!isnull) {
            for (Py_ssize_t k = 0; k < PyList_GET_SIZE(v); k++) {
                Py_ssize_t n;
                const char *s = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(v, k), &n);
                if (!s || buf_put(&c->child_data, s, (size_t)n) < 0) return -1;
                if (c->child_data.len > INT32_MAX) return -1;
                if (put_i32(&c->child_offsets, (int64_t)c->child_data.len) < 0) return -1;
                c->child_n++;
            }
        }
        return put_i32(&c->offsets, (int64_t)c->child_n);
    }
}

/* A column buffer handed to Python without a copy: a read-only buffer-protocol object that owns the malloc'd
 * memory (pa.py_buffer wraps it, zero-copy; the Arrow array keeps it alive) and frees it when the last reference
 * goes. Before it, each column was copied once more into a bytes object: a memmove of every byte of every chunk,
 * and as many fresh pages. */
typedef struct {
    PyObject_HEAD
    char *buf;
    Py_ssize_t len;
} Mem;

static int mem_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Mem *m = (Mem *)self;
    return PyBuffer_FillInfo(view, self, m->buf, m->len, 1, flags);
}

static void mem_dealloc(PyObject *self) {
    free(((Mem *)self)->buf);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs MEM_AS_BUFFER = {mem_getbuffer, NULL};

static PyTypeObject MEM_TYPE = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pulsar_ops._native.Mem",
    .tp_basicsize = sizeof(Mem),
    .tp_dealloc = mem_dealloc,
    .tp_as_buffer = &MEM_AS_BUFFER,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a native column buffer (read-only, buffer protocol)",
};

#define MEM_MIN 4096 /* below this a copy into bytes is as cheap */

static PyObject *bytes_of(Buf *b) {
    if (!b->buf || b->len < MEM_MIN) return PyBytes_FromStringAndSize(b->buf ? b->buf : "", (Py_ssize_t)b->len);
    Mem *m = PyObject_New(Mem, &MEM_TYPE);
    if (!m) return NULL;
    char *shrunk = b->cap - b->len > b->len / 4 ? (char *)realloc(b->buf, b->len) : NULL; /* in place, no copy */
    m->buf = shrunk ? shrunk : b->buf;
    m->len = (Py_ssize_t)b->len;
    b->buf = NULL; /* the Mem owns it now: col_free frees NULL */
    b->len = b->cap = 0;
    return (PyObject *)m;
}

static PyObject *col_result(Col *c) {
    PyObject *valid;
    if (c->nulls) {
        valid = bytes_of(&c->valid);
    } else {
        valid = Py_None;
        Py_INCREF(valid);
    }
    if (!valid) return NULL;
    switch (c->type) {
    case 'q':
    case 'i':
    case 'b':
        return Py_BuildValue("(nNN)", c->nulls, valid, bytes_of(&c->values));
    case 's':
        return Py_BuildValue("(nNNN)", c->nulls, valid, bytes_of(&c->offsets), bytes_of(&c->values));
    default:
        return Py_BuildValue("(nNNnNN)", c->nulls, valid, bytes_of(&c->offsets), c->child_n,
                             bytes_of(&c->child_offsets), bytes_of(&c->child_data));
    }
}

#define ZNODE_COLS 19
#define BK_COLS 28

static int all_digits(const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
    }
    return 1;
}

/* The ledger id and layout (1 legacy, 2 long) of <root>/DD/DDDD/LDDDD or <root>/DDD/DDDD/DDDD/DDDD/LDDDD, as
 * formats.ledger_path.ledger_id_from_parts reads them; 0 for any other path. */
static int hier_ledger(const char *p, Py_ssize_t n, const char *root, Py_ssize_t rn, int64_t *id) {
    if (n <= rn || memcmp(p, root, (size_t)rn) != 0 || p[rn] != '/') return 0;
    const char *s = p + rn + 1;
    Py_ssize_t m = n - rn - 1;
    char digits[20];
    int nd = 0, layout;
    if (m == 2 + 1 + 4 + 1 + 5 && s[2] == '/' && s[7] == '/' && s[8] == 'L') {
        memcpy(digits, s, 2);
        memcpy(digits + 2, s + 3, 4);
        memcpy(digits + 6, s + 9, 4);
        nd = 10;
        layout = 1;
    } else if (m == 3 + 1 + 4 + 1 + 4 + 1 + 4 + 1 + 5 && s[3] == '/' && s[8] == '/' && s[13] == '/' &&
               s[18] == '/' && s[19] == 'L') {
        memcpy(digits, s, 3);
        memcpy(digits + 3, s + 4, 4);
        memcpy(digits + 7, s + 9, 4);
        memcpy(digits + 11, s + 14, 4);
        memcpy(digits + 15, s + 20, 4);
        nd = 19;
        layout = 2;
    } else {
        return 0;
    }
    if (!all_digits(digits, nd)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < nd; i++) v = v * 10 + (uint64_t)(digits[i] - '0'); /* 19 digits < 2^64 */
    if (v > (uint64_t)INT64_MAX) return 0;
    *id = (int64_t)v;
    return layout;
}


/* A list<string> column's next item, then its end (a non-null list). */
static int col_list_item(Col *c, const char *s, size_t n) {
    if (buf_put(&c->child_data, s, n) < 0 || c->child_data.len > INT32_MAX) return -1;
    c->child_n++;
    return put_i32(&c->child_offsets, (int64_t)c->child_data.len);
}

static int col_list_end(Col *c) {
    if (col_valid(c, 0) < 0) return -1;
    return put_i32(&c->offsets, (int64_t)c->child_n);
}

/* A non-null string column value written by fill (a JSON column). */
static int col_str_fill(Col *c, Ledger *L, int (*fill)(Ledger *, Buf *)) {
    if (col_valid(c, 0) < 0 || fill(L, &c->values) < 0 || c->values.len > INT32_MAX) return -1;
    return put_i32(&c->offsets, (int64_t)c->values.len);
}

/* A nullable string column value: the slice, or null. */
static int col_opt_str(Col *c, const Slice *s) {
    if (s) return col_str(c, (const char *)s->p, (size_t)s->n);
    return col_append(c, Py_None);
}

/* The 11 stat values (kazoo ZnodeStat order) as int64: 0 when one is not an int or is past its column's range
 * (int32: version, cversion, aversion, dataLength, numChildren): pyarrow would refuse such a row. */
static int stat_ints(PyObject *stat, int64_t v[11]) {
    if (!PyTuple_Check(stat) || PyTuple_GET_SIZE(stat) != 11) return 0;
    for (int k = 0; k < 11; k++) {
        PyObject *o = PyTuple_GET_ITEM(stat, k);
        if (!PyLong_CheckExact(o)) return 0;
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        v[k] = x;
        if ((k == 4 || k == 5 || k == 6 || k == 8 || k == 9) && (x < INT32_MIN || x > INT32_MAX)) return 0;
    }
    return 1;
}

static const char *STATE_STRS[4] = {NULL, "OPEN", "IN_RECOVERY", "CLOSED"};
static const char *DIGEST_STRS[5] = {NULL, "CRC32", "HMAC", "CRC32C", "DUMMY"};
static const char *LAYOUT_STRS[3] = {NULL, "legacy", "long"};

/* The znodes row of a read this batch takes (kind k, no decode error), from its ASCII path, stat and hash:
 * exactly znode_row's values (stat in kazoo ZnodeStat order). */
static int znode_cols(Col *zc, const char *st, Py_ssize_t stn, const char *p, Py_ssize_t n, const int64_t *s,
                      const char sha[64], const char *kind) {
    Py_ssize_t cut = n - 1, depth = 0;
    while (cut >= 0 && p[cut] != '/') cut--;
    for (Py_ssize_t i = 0; i < n; i++) depth += p[i] == '/';
    int bad = col_str(&zc[0], st, (size_t)stn) | col_str(&zc[1], p, (size_t)n);
    bad |= cut > 0 ? col_str(&zc[2], p, (size_t)cut) : col_str(&zc[2], "/", 1);
    bad |= col_str(&zc[3], p + cut + 1, (size_t)(n - cut - 1));
    bad |= col_int(&zc[4], depth);
    static const int from_stat[11] = {4, 5, 6, 0, 1, 10, 2, 3, 8, 9, 7};
    for (int k = 0; k < 11; k++) bad |= col_int(&zc[5 + k], s[from_stat[k]]);
    bad |= col_str(&zc[16], sha, 64) | col_str(&zc[17], kind, strlen(kind)) | col_append(&zc[18], Py_None);
    return bad ? -1 : 0;
}

/* A read as the batches take it: an ASCII path, the data, the 11 stat values, each in its column's range -- from a
 * (path, data, stat) tuple of a list, or from a packed chunk (pack_reads' layout: no Python object per read). A read
 * that is not of that shape goes to the per-znode path (the same rows, or its error). */
typedef struct {
    const char *path;
    Py_ssize_t pn;
    const uint8_t *data;
    Py_ssize_t dn;
    int64_t s[11];
    PyObject *path_o, *data_o; /* a list's read: its str and bytes (borrowed); NULL for a packed read */
} CRead;

/* the int32 columns of the znodes row (version, cversion, aversion, dataLength, numChildren): pyarrow would refuse
 * a value past them (stat_ints' rule) */
static int stat_in_range(const int64_t v[11]) {
    static const int k32[5] = {4, 5, 6, 8, 9};
    for (int k = 0; k < 5; k++) {
        if (v[k32[k]] < INT32_MIN || v[k32[k]] > INT32_MAX) return 0;
    }
    return 1;
}

typedef struct {
    PyObject *list;    /* a list of reads, or NULL */
    Py_buffer view;    /* a packed chunk (view.obj set) */
    Py_ssize_t count;  /* its reads */
    Py_ssize_t *off;   /* each packed read's offset */
    PyObject *idx;     /* the indexes to take (a list of ints), or NULL: every read in order */
    int shared;        /* off is the cache's (OFFSETS), not this call's own */
} Reads;

/* The offsets of the last packed chunk's reads: a decode worker hands the same chunk to bk_batch, ml_batch,
 * schema_batch, misc_batch and unpack_reads in turn, and each would walk every read's header again (~9 % of ml_batch:
 * a 1 MB chunk's headers miss the cache). Keyed by the bytes object itself, held by a reference (so it can be
 * neither freed nor reused meanwhile; bytes are immutable); busy while a call uses it, so that a call re-entered
 * from a Python helper (a decompressor) never frees offsets in use. */
static struct {
    PyObject *obj;
    Py_ssize_t *off;
    Py_ssize_t count;
    int busy;
} OFFSETS;

static void reads_close(Reads *R) {
    if (R->view.obj) PyBuffer_Release(&R->view);
    if (R->shared) {
        OFFSETS.busy--;
    } else {
        free(R->off);
    }
}

/* reads: a list of (path, data, stat) or a packed chunk (bytes); idx: None or a list of indexes into it. 0, or -1
 * with a Python error (a malformed chunk: ValueError, as unpack_reads) */
static int reads_open(PyObject *reads, PyObject *idx, Reads *R) {
    memset(R, 0, sizeof *R);
    if (idx != Py_None) {
        if (!PyList_CheckExact(idx)) {
            PyErr_SetString(PyExc_TypeError, "idx: a list of read indexes, or None");
            return -1;
        }
        R->idx = idx;
    }
    if (PyList_Check(reads)) {
        R->list = reads;
        R->count = PyList_GET_SIZE(reads);
        return 0;
    }
    if (!PyBytes_CheckExact(reads)) {
        PyErr_SetString(PyExc_TypeError, "reads: a list of (path, data, stat) or a packed chunk (bytes)");
        return -1;
    }
    if (PyObject_GetBuffer(reads, &R->view, PyBUF_SIMPLE) < 0) return -1;
    if (reads == OFFSETS.obj) {
        R->off = OFFSETS.off;
        R->count = OFFSETS.count;
        R->shared = 1;
        OFFSETS.busy++;
        return 0;
    }
    const char *b = (const char *)R->view.buf, *end = b + R->view.len;
    uint32_t count, n;
    if (R->view.len < 9 || (uint8_t)b[0] != PACK_MAGIC) goto bad;
    memcpy(&count, b + 1, 4);
    memcpy(&n, b + 5, 4);
    const char *p = b + 9;
    if ((size_t)(end - p) < n) goto bad;
    p += n;
    if ((size_t)(end - p) / 96 < count) goto bad;
    R->off = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (count ? count : 1));
    if (!R->off) {
        PyErr_NoMemory();
        reads_close(R);
        return -1;
    }
    for (uint32_t i = 0; i < count; i++) {
        uint32_t pn, dn;
        R->off[i] = p - b;
        if (end - p < 4) goto bad;
        memcpy(&pn, p, 4);
        p += 4;
        if ((size_t)(end - p) < (size_t)pn + 4) goto bad;
        p += pn;
        memcpy(&dn, p, 4);
        p += 4;
        if ((size_t)(end - p) < (size_t)dn + 88) goto bad;
        p += (size_t)dn + 88;
    }
    if (p != end) goto bad;
    R->count = count;
    if (!OFFSETS.busy) { /* the chunk's offsets kept for the next call on it */
        free(OFFSETS.off);
        Py_XDECREF(OFFSETS.obj);
        Py_INCREF(reads);
        OFFSETS.obj = reads;
        OFFSETS.off = R->off;
        OFFSETS.count = R->count;
        OFFSETS.busy = 1;
        R->shared = 1;
    }
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "a truncated or malformed packed chunk");
    reads_close(R);
    return -1;
}

static Py_ssize_t reads_len(const Reads *R) { return R->idx ? PyList_GET_SIZE(R->idx) : R->count; }

/* The k-th read to take: its index into the chunk (*i) and, when it has the batches' shape, its values (1); 0 when it
 * goes to the per-znode path as it is; -1 with a Python error (a bad index). */
static int reads_at(const Reads *R, Py_ssize_t k, Py_ssize_t *i, CRead *c) {
    Py_ssize_t ix = k;
    if (R->idx) {
        ix = PyLong_AsSsize_t(PyList_GET_ITEM(R->idx, k));
        if (ix == -1 && PyErr_Occurred()) return -1;
        if (ix < 0 || ix >= R->count) {
            PyErr_SetString(PyExc_IndexError, "a read index past the chunk");
            return -1;
        }
    }
    *i = ix;
    if (R->list) {
        PyObject *r = PyList_GET_ITEM(R->list, ix);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 3) return 0;
        PyObject *path = PyTuple_GET_ITEM(r, 0), *data = PyTuple_GET_ITEM(r, 1);
        if (!PyUnicode_CheckExact(path) || !PyUnicode_IS_ASCII(path) || !PyBytes_Check(data)) return 0;
        if (!stat_ints(PyTuple_GET_ITEM(r, 2), c->s)) return 0;
        c->path = (const char *)PyUnicode_DATA(path);
        c->pn = PyUnicode_GET_LENGTH(path);
        c->data = (const uint8_t *)PyBytes_AS_STRING(data);
        c->dn = PyBytes_GET_SIZE(data);
        c->path_o = path;
        c->data_o = data;
        return 1;
    }
    const char *p = (const char *)R->view.buf + R->off[ix];
    uint32_t pn, dn;
    memcpy(&pn, p, 4);
    c->path = p + 4;
    c->pn = (Py_ssize_t)pn;
    for (uint32_t j = 0; j < pn; j++) {
        if ((uint8_t)c->path[j] >= 0x80) return 0;
    }
    p += 4 + pn;
    memcpy(&dn, p, 4);
    c->data = (const uint8_t *)p + 4;
    c->dn = (Py_ssize_t)dn;
    memcpy(c->s, p + 4 + dn, 88);
    c->path_o = c->data_o = NULL;
    return stat_in_range(c->s);
}

/* One read: 1 taken (its rows appended), 0 left to the per-znode path, -1 a Python error. */
static int bk_take(const CRead *r, Col *zc, Col *bc, const char *st, Py_ssize_t stn, const char *root, Py_ssize_t rn,
                   long long max_bytes, int64_t *mz) {
    const char *p = r->path;
    Py_ssize_t n = r->pn;
    const int64_t *s = r->s;
    int64_t lid = 0;
    int layout = hier_ledger(p, n, root, rn, &lid);
    if (!layout) return 0;
    if (s[8] > max_bytes || r->dn > max_bytes) return 0;
    Ledger *L;
    const uint8_t *d = r->data;
    int version = ledger_of(d, r->dn, &L);
    if (!version) return 0;
    char sha[64];
    sha256_hex(d, (size_t)r->dn, sha);
    int bad = znode_cols(zc, st, stn, p, n, s, sha, "bk-ledger");
    /* _bk_ledger's row: path, ledger_id, layout, the metadata's fields, ctime or the znode's, ctime, version,
       mzxid, znode ctime, znode mtime, data_length, sha, the custom metadata, bookies, ensembles */
    int has_ctime = L->has_ctime && L->ctime != 0;
    bad |= col_str(&bc[0], p, (size_t)n) | col_int(&bc[1], lid);
    bad |= col_str(&bc[2], LAYOUT_STRS[layout], strlen(LAYOUT_STRS[layout])) | col_int(&bc[3], version);
    bad |= col_str(&bc[4], STATE_STRS[L->state], strlen(STATE_STRS[L->state])) | col_int(&bc[5], L->length);
    bad |= col_int(&bc[6], L->has_last ? L->last : -1) | col_int(&bc[7], L->ensemble) | col_int(&bc[8], L->quorum);
    bad |= col_int(&bc[9], L->has_ack ? L->ack : L->quorum);
    if (L->has_digest) {
        bad |= col_str(&bc[10], DIGEST_STRS[L->digest], strlen(DIGEST_STRS[L->digest]));
    } else {
        bad |= col_append(&bc[10], Py_None);
    }
    bad |= col_int(&bc[11], has_ctime ? L->ctime : s[2]) | col_opt_int(&bc[12], has_ctime, L->ctime);
    bad |= col_int(&bc[13], s[4]) | col_int(&bc[14], s[1]) | col_int(&bc[15], s[2]) | col_int(&bc[16], s[3]);
    bad |= col_int(&bc[17], s[8]) | col_str(&bc[18], sha, 64);
    for (int k = 0; k < 6; k++) {
        const Custom *c = custom_find(L, CUSTOM_KEYS[k]);
        bad |= col_opt_str(&bc[19 + k], c ? &c->value : NULL);
    }
    bad |= col_str_fill(&bc[25], L, custom_json_buf);
    for (int i = 0; i < L->nmembers && !bad; i++) {
        if (first_member(L, i)) bad |= col_list_item(&bc[26], (const char *)L->members[i].p, (size_t)L->members[i].n);
    }
    bad |= col_list_end(&bc[26]) | col_str_fill(&bc[27], L, ensembles_json_buf);
    if (bad) {
        PyErr_NoMemory();
        return -1;
    }
    *mz = s[1];
    return 1;
}

/* One read's outcome in a batch: taken (its mzxid widens [lo, hi]) or left to the per-znode path (its index
 * appended to `rest`). -1 on a Python error. */
static int batch_note(int taken, Py_ssize_t i, int64_t mz, PyObject *rest, Py_ssize_t *handled, int64_t *lo,
                      int64_t *hi) {
    if (taken) {
        if (*handled == 0 || mz < *lo) *lo = mz;
        if (*handled == 0 || mz > *hi) *hi = mz;
        (*handled)++;
        return 0;
    }
    PyObject *ix = PyLong_FromSsize_t(i);
    int err = !ix || PyList_Append(rest, ix) < 0;
    Py_XDECREF(ix);
    return err ? -1 : 0;
}

/* ---- ml_batch: the managed-ledger and cursor znodes of a chunk of reads as Arrow buffers ----------------------
 * ml_batch(store, reads, max_bytes, specs, helpers) -> (n, rest, tables, rows, min mzxid, max mzxid, scopes)
 *
 * specs: the column specs of znodes, managed_ledgers, ledger_list, cursors, ack_ranges, cursor_properties;
 * helpers: (unwrap, props_json, system cursor names, system cursor prefixes, bucket property prefix,
 * compacted-topic property name) -- the Python side's own functions and constants, so that the compression
 * header, the properties JSON and the system-cursor names have one definition.
 *
 * A read is taken when its path is a topic (<t>/<ns>/persistent/<enc>, V1 <p>/<c>/<ns>/persistent/<enc>) or a
 * cursor (that plus /<enc>) znode under /managed-ledgers as scrape.classify reads it, ASCII, with no empty
 * segment, whose URL-encoded names decode to valid UTF-8 (names.decode's rule; the rest is left to Python, for
 * its DecodeError), within the size limit,
 * and its value decodes as the plain-binary fast path does (ml_info / cursor_info: the same parsers), behind a
 * compression header that `unwrap` accepts; a cursor with a delayed-delivery bucket property is left too.
 * Everything else goes back to the per-znode path (scrape.sink.SnapshotSink.node), which gives the same rows: so
 * this never decides an error. The rows are exactly scrape.extract_fast._managed_ledger's and _cursor's.
 * Field numbers: MLDataFormats.proto (apache/pulsar managed-ledger), as ml_info and cursor_info read them. */

/* A multi-table batch's result: (handled, rest, [[column, ...] per table], [rows per table], lo, hi, scopes); lo and
 * hi are None when nothing was handled. NULL with an exception set on failure. */
static PyObject *tables_result(Col **t, int ntables, const int *widths, Py_ssize_t handled, PyObject *rest,
                               int64_t lo, int64_t hi, PyObject *scopes) {
    PyObject *tables = PyList_New(ntables), *counts = PyList_New(ntables);
    if (!tables || !counts) goto fail;
    for (int k = 0; k < ntables; k++) {
        PyObject *tl = PyList_New(widths[k]);
        PyObject *cnt = PyLong_FromSsize_t(t[k][0].n);
        if (!tl || !cnt) {
            Py_XDECREF(tl);
            Py_XDECREF(cnt);
            goto fail;
        }
        PyList_SET_ITEM(tables, k, tl);
        PyList_SET_ITEM(counts, k, cnt);
        for (int j = 0; j < widths[k]; j++) {
            PyObject *c = col_result(&t[k][j]);
            if (!c) goto fail;
            PyList_SET_ITEM(tl, j, c);
        }
    }
    if (handled)
        return Py_BuildValue("(nONNLLO)", handled, rest, tables, counts, (long long)lo, (long long)hi, scopes);
    return Py_BuildValue("(nONNOOO)", handled, rest, tables, counts, Py_None, Py_None, scopes);
fail:
    Py_XDECREF(tables);
    Py_XDECREF(counts);
    return NULL;
}

#define ML_TABLES 6
#define ML_CODECS 5 /* MLDataFormats.proto CompressionType: NONE LZ4 ZLIB ZSTD SNAPPY */
#define ML_MAX_UNCOMPRESSED (64 * 1024 * 1024) /* formats.compression.MAX_UNCOMPRESSED_SIZE */

/* The compression header of a ManagedLedgerInfo / ManagedCursorInfo value (formats/compression.py: magic 0x4778,
 * int32 N, N bytes of MLDataFormats.proto ManagedLedgerInfoMetadata {required CompressionType compressionType = 1;
 * required int32 uncompressedSize = 2}, the payload). Only its canonical form is read here: each field once, a
 * varint, a known codec, a size in [0, 64 MiB]. Returns the codec number and sets the size and the payload's
 * offset; -1 for anything else (formats.compression.unwrap decides: a plain value, a DecodeError, ...). */
static int ml_header(const uint8_t *d, Py_ssize_t dn, int64_t *size, Py_ssize_t *off) {
    if (dn < 6 || d[0] != 0x47 || d[1] != 0x78) return -1;
    int32_t n = be32(d + 2);
    if (n < 0 || (Py_ssize_t)n > dn - 6) return -1;
    const uint8_t *p = d + 6, *end = d + 6 + n;
    int codec = -1;
    int64_t sz = -1;
    while (p < end) {
        uint8_t tag = *p++;
        uint64_t v;
        if ((tag != 0x08 && tag != 0x10) || read_varint(&p, end, &v) < 0) return -1;
        if (tag == 0x08) {
            if (codec >= 0 || v >= ML_CODECS) return -1;
            codec = (int)v;
        } else {
            if (sz >= 0 || v > ML_MAX_UNCOMPRESSED) return -1;
            sz = (int64_t)v;
        }
    }
    if (codec < 0 || sz < 0) return -1;
    *size = sz;
    *off = 6 + (Py_ssize_t)n;
    return codec;
}
static const int ML_WIDTHS[ML_TABLES] = {19, 22, 12, 20, 8, 7}; /* znodes, managed_ledgers, ledger_list, cursors,
                                                                  ack_ranges, cursor_properties */
static const char ML_ROOT[] = "/managed-ledgers/";
#define ML_ROOT_LEN (sizeof(ML_ROOT) - 1)
#define PERSISTENT_PREFIX "persistent://"
static PyObject *FORMAT_BINARY, *FORMAT_TEXT, *FORMAT_EMPTY, *CODEC_NONE;

static int has_escape(const char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] == '%' || p[i] == '+') return 1;
    }
    return 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Whether b[0:n] is UTF-8 as Python's strict decoder accepts it (no overlong forms, no surrogates, at most
 * U+10FFFF). */
static int utf8_valid(const uint8_t *b, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        uint8_t c = b[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int len;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            return 0;
        }
        if (i + len > n || b[i + 1] < lo || b[i + 1] > hi) return 0;
        for (int k = 2; k < len; k++) {
            if (b[i + k] < 0x80 || b[i + k] > 0xBF) return 0;
        }
        i += len;
    }
    return 1;
}

/* names.decode (URLDecoder.decode: '+' a space, %XX a byte, then strict UTF-8) into out (cap bytes) as UTF-8:
 * 1 when decoded, 0 when Python must decide (a malformed escape or invalid UTF-8: its DecodeError; too long). */
static int url_decode(const char *p, Py_ssize_t n, char *out, Py_ssize_t cap, Py_ssize_t *out_n) {
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (k >= cap) return 0;
        char c = p[i];
        if (c == '+') {
            out[k++] = ' ';
        } else if (c == '%') {
            if (i + 2 >= n) return 0;
            int hi = hexval(p[i + 1]), lo = hexval(p[i + 2]);
            if (hi < 0 || lo < 0) return 0;
            out[k++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[k++] = c;
        }
    }
    if (!utf8_valid((const uint8_t *)out, k)) return 0;
    *out_n = k;
    return 1;
}

static int seg_is(const char *p, Py_ssize_t n, const char *word) {
    size_t k = strlen(word);
    return (size_t)n == k && memcmp(p, word, k) == 0;
}

/* names.partition_suffix: the index after the last "-partition-", canonical and within int32; -1 otherwise. */
static int64_t partition_of(const char *p, Py_ssize_t n, Py_ssize_t *base_n) {
    static const char SUF[] = "-partition-";
    const Py_ssize_t sn = (Py_ssize_t)(sizeof(SUF) - 1);
    *base_n = n;
    for (Py_ssize_t pos = n - sn; pos >= 0; pos--) {
        if (memcmp(p + pos, SUF, (size_t)sn) != 0) continue;
        const char *d = p + pos + sn;
        Py_ssize_t dn = n - pos - sn;
        if (dn < 1 || dn > 10 || !all_digits(d, dn) || (dn > 1 && d[0] == '0')) return -1;
        int64_t v = 0;
        for (Py_ssize_t i = 0; i < dn; i++) v = v * 10 + (d[i] - '0');
        if (v > INT32_MAX) return -1;
        *base_n = pos;
        return v;
    }
    return -1;
}

/* Whether an ASCII cursor name is one of Pulsar's own (pulsar_names._cursor_reason_plain): an exact name or a
 * prefix. The names and prefixes come from the Python side. */
static int is_system_name(const char *p, Py_ssize_t n, PyObject *names, PyObject *prefixes) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names); k++) {
        Py_ssize_t m;
        const char *s = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(names, k), &m);
        if (s && m == n && memcmp(s, p, (size_t)n) == 0) return 1;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(prefixes); k++) {
        Py_ssize_t m;
        const char *s = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(prefixes, k), &m);
        if (s && m <= n && memcmp(s, p, (size_t)m) == 0) return 1;
    }
    return 0;
}

/* Count one znode in its scope (/managed-ledgers/<t>/<ns>, V1 .../<p>/<c>/<ns>): consecutive znodes mostly share
 * it, so the count is kept in C until the scope changes. */
typedef struct {
    PyObject *dict;
    const char *last;
    Py_ssize_t last_n;
    char buf[512];
    long count;
} Scopes;

static int scopes_flush(Scopes *sc) {
    if (!sc->count) return 0;
    PyObject *key = PyUnicode_DecodeASCII(sc->buf, sc->last_n, NULL);
    if (!key) return -1;
    PyObject *old = PyDict_GetItemWithError(sc->dict, key);
    long base = 0;
    if (old) base = PyLong_AsLong(old);
    else if (PyErr_Occurred()) {
        Py_DECREF(key);
        return -1;
    }
    PyObject *v = PyLong_FromLong(base + sc->count);
    int rc = v ? PyDict_SetItem(sc->dict, key, v) : -1;
    Py_XDECREF(v);
    Py_DECREF(key);
    sc->count = 0;
    return rc;
}

static int scopes_add(Scopes *sc, const char *p, Py_ssize_t n) {
    if (sc->count && n == sc->last_n && memcmp(sc->buf, p, (size_t)n) == 0) {
        sc->count++;
        return 0;
    }
    if (scopes_flush(sc) < 0) return -1;
    memcpy(sc->buf, p, (size_t)n);
    sc->last_n = n;
    sc->count = 1;
    return 0;
}

/* One read: 0 left to Python, 1 taken (its rows appended), -1 a Python error. */
#define MAX_BUCKET_PROPS 256

/* int(value) of a delayed-delivery bucket property as extract_fast._buckets reads it, only for the plain form:
 * an optional '-', then 1 to 18 ASCII digits (within int64). -1 leaves everything else (spaces, '+', '_',
 * other digits, big values, not a number) to the per-znode path. */
static int bucket_int(const uint8_t *p, Py_ssize_t n, int64_t *out) {
    int neg = n > 0 && p[0] == '-';
    if (neg) p++, n--;
    if (n < 1 || n > 18) return -1;
    int64_t v = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = neg ? -v : v;
    return 0;
}

static int ml_take(const CRead *r, Col **t, PyObject *store, long long max_bytes, PyObject *helpers,
                   Scopes *sc, int64_t *mz_out) {
    const char *p = r->path;
    Py_ssize_t n = r->pn;
    if (n <= (Py_ssize_t)ML_ROOT_LEN || memcmp(p, ML_ROOT, ML_ROOT_LEN) != 0) return 0;
    /* the segments below /managed-ledgers (scrape.classify._ml_kind) */
    Py_ssize_t st[7], ln[7];
    int ns = 0;
    Py_ssize_t i0 = (Py_ssize_t)ML_ROOT_LEN;
    for (Py_ssize_t i = i0; i <= n; i++) {
        if (i == n || p[i] == '/') {
            if (ns == 7) return 0;
            st[ns] = i0;
            ln[ns] = i - i0;
            if (ln[ns] == 0) return 0; /* an empty segment: parse_ml_name's DecodeError */
            ns++;
            i0 = i + 1;
        }
    }
    int cursor, v1;
    if (ns >= 3 && seg_is(p + st[2], ln[2], "persistent")) {
        if (ns != 4 && ns != 5) return 0;
        v1 = 0;
        cursor = ns == 5;
    } else if (ns >= 4 && seg_is(p + st[3], ln[3], "persistent")) {
        if (ns != 5 && ns != 6) return 0;
        v1 = 1;
        cursor = ns == 6;
    } else {
        return 0;
    }
    int m = v1 ? 5 : 4; /* segments of the managed-ledger name */
    const char *enc = p + st[m - 1];
    Py_ssize_t enc_n = ln[m - 1];
    /* the decoded local and subscription names (names.decode) as UTF-8, the same bytes when nothing is escaped:
     * "-partition-", the digits after it and the system cursor names are ASCII, so the byte-wise comparisons
     * below give what Python's str operations give */
    char local_buf[512], sub_buf[512];
    const char *local = enc;
    Py_ssize_t local_n = enc_n;
    if (has_escape(enc, enc_n)) {
        if (!url_decode(enc, enc_n, local_buf, (Py_ssize_t)sizeof local_buf, &local_n)) return 0;
        local = local_buf;
    }
    const char *sub = cursor ? p + st[m] : NULL;
    Py_ssize_t sub_n = cursor ? ln[m] : 0;
    const char *subd = sub;
    Py_ssize_t subd_n = sub_n;
    int sub_escaped = cursor && has_escape(sub, sub_n);
    if (sub_escaped) {
        if (!url_decode(sub, sub_n, sub_buf, (Py_ssize_t)sizeof sub_buf, &subd_n)) return 0;
        subd = sub_buf;
    }
    const char *nsp = p + st[0];
    Py_ssize_t nsp_n = st[m - 3] + ln[m - 3] - st[0]; /* tenant/ns or property/cluster/ns */
    Py_ssize_t ml_path_n = st[m - 1] + enc_n;         /* the topic znode's path */
    if (ml_path_n > (Py_ssize_t)sizeof sc->buf) return 0;
    const int64_t *sv = r->s;
    if (sv[8] > max_bytes || r->dn > max_bytes) return 0; /* size_error decides */
    int64_t mz = sv[1];

    /* the value */
    PyObject *unwrap = PyTuple_GET_ITEM(helpers, 0), *props_json = PyTuple_GET_ITEM(helpers, 1);
    PyObject *names = PyTuple_GET_ITEM(helpers, 2), *prefixes = PyTuple_GET_ITEM(helpers, 3);
    PyObject *bucket = PyTuple_GET_ITEM(helpers, 4), *compacted = PyTuple_GET_ITEM(helpers, 5);
    PyObject *decompress = PyTuple_GET_ITEM(helpers, 6), *codec_names = PyTuple_GET_ITEM(helpers, 7);
    int hc;
    int64_t hsize = 0;
    Py_ssize_t hoff = 0;
    int taken = 0;
    PyObject *plain = NULL, *codec = NULL, *rows = NULL, *props = NULL, *sprops = NULL, *pjson = NULL;
    PyObject *format = FORMAT_BINARY;
    Py_ssize_t dn = r->dn;
    const char *d = (const char *)r->data;
    const uint8_t *pp = NULL, *pend = NULL; /* the plain value: plain's bytes, or the read's own */
    if (dn == 0) {
        if (cursor) return 0; /* "empty value": DecodeError */
        format = FORMAT_EMPTY;
        codec = CODEC_NONE;
        Py_INCREF(codec);
        pp = pend = (const uint8_t *)d;
    } else if (dn >= 2 && (uint8_t)d[0] == 0x47 && (uint8_t)d[1] == 0x78 &&
               (hc = ml_header((const uint8_t *)d, dn, &hsize, &hoff)) >= 0) {
        /* a canonical header: the payload as unwrap gives it (formats.compression._DECOMPRESS's own functions) */
        if (hc == 0) {
            plain = PyBytes_FromStringAndSize(d + hoff, dn - hoff);
            if (!plain) return -1;
        } else {
            PyObject *payload = PyBytes_FromStringAndSize(d + hoff, dn - hoff);
            PyObject *sz = payload ? PyLong_FromLongLong(hsize) : NULL;
            plain = sz ? PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(decompress, hc), payload, sz, NULL) : NULL;
            Py_XDECREF(payload);
            Py_XDECREF(sz);
            if (!plain || !PyBytes_Check(plain) || PyBytes_GET_SIZE(plain) != hsize) {
                Py_XDECREF(plain);
                PyErr_Clear(); /* the per-znode path gives the error */
                return 0;
            }
        }
        codec = PyTuple_GET_ITEM(codec_names, hc);
        Py_INCREF(codec);
    } else if (dn >= 2 && (uint8_t)d[0] == 0x47 && (uint8_t)d[1] == 0x78) {
        /* a packed read has no Python objects: made for this call (a rare, non-canonical header) */
        PyObject *data_o = r->data_o ? r->data_o : PyBytes_FromStringAndSize(d, dn);
        PyObject *path_o = !data_o ? NULL : r->path_o ? r->path_o : PyUnicode_DecodeASCII(p, n, NULL);
        PyObject *u = path_o ? PyObject_CallFunctionObjArgs(unwrap, data_o, path_o, NULL) : NULL;
        if (!r->data_o) Py_XDECREF(data_o);
        if (!r->path_o) Py_XDECREF(path_o);
        if (!u || !PyTuple_Check(u) || PyTuple_GET_SIZE(u) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(u, 0)) ||
            !PyUnicode_Check(PyTuple_GET_ITEM(u, 1))) {
            Py_XDECREF(u);
            PyErr_Clear(); /* the per-znode path gives the error */
            return 0;
        }
        plain = PyTuple_GET_ITEM(u, 0);
        codec = PyTuple_GET_ITEM(u, 1);
        Py_INCREF(plain);
        Py_INCREF(codec);
        Py_DECREF(u);
    } else {
        codec = CODEC_NONE;
        Py_INCREF(codec);
        pp = (const uint8_t *)d;
        pend = pp + dn;
        if (!cursor && dn >= 10 && memcmp(d, "ledgerInfo", 10) == 0) format = FORMAT_TEXT;
    }
    if (plain) {
        pp = (const uint8_t *)PyBytes_AS_STRING(plain);
        pend = pp + PyBytes_GET_SIZE(plain);
    }
    int64_t scalars[7] = {0, 0, 0, 0, 0, 0, 0};
    int has[7] = {0, 0, 0, 0, 0, 0, 0};
    long batched = 0;
    int terminated = 0;
    Py_ssize_t nsp_props = 0;
    int has_bucket[MAX_BUCKET_PROPS];
    int64_t bucket_v[MAX_BUCKET_PROPS];
    rows = PyList_New(0);
    props = PyList_New(0);
    sprops = PyList_New(0);
    if (!rows || !props || !sprops) goto error;
    if (cursor) {
        int rc = cursor_parse(pp, pend, scalars, has, rows, props, sprops, &batched);
        if (rc == FAIL) goto error;
        if (rc == BAIL) goto leave;
        Py_ssize_t bn;
        const char *b = PyUnicode_AsUTF8AndSize(bucket, &bn);
        if (!b) goto error;
        nsp_props = PyList_GET_SIZE(sprops);
        if (nsp_props > MAX_BUCKET_PROPS) goto leave;
        for (Py_ssize_t k = 0; k < nsp_props; k++) {
            Py_ssize_t kn, vn;
            PyObject *kv = PyList_GET_ITEM(sprops, k);
            const char *kp = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(kv, 0), &kn);
            if (!kp) goto error;
            has_bucket[k] = 0;
            if (kn < bn || memcmp(kp, b, (size_t)bn) != 0) continue;
            /* a bucket: extract_fast._buckets reads int(value.strip()); taken only as plain decimal digits (an
               optional '-') within int64, under a name no other property repeats (the dict keeps the last) */
            const char *vp = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(kv, 1), &vn);
            if (!vp) goto error;
            if (bucket_int((const uint8_t *)vp, vn, &bucket_v[k]) < 0) goto leave;
            for (Py_ssize_t j = 0; j < nsp_props; j++) {
                Py_ssize_t jn;
                const char *jp = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(PyList_GET_ITEM(sprops, j), 0), &jn);
                if (!jp) goto error;
                if (j != k && jn == kn && memcmp(jp, kp, (size_t)kn) == 0) goto leave;
            }
            has_bucket[k] = 1;
        }
    } else if (format == FORMAT_BINARY) {
        int rc = ml_info_parse(pp, pend, rows, props, &terminated);
        if (rc == FAIL) goto error;
        if (rc == BAIL || (PyList_GET_SIZE(rows) == 0 && !terminated && PyList_GET_SIZE(props) == 0)) goto leave;
    } else if (format == FORMAT_TEXT) {
        int rc = ml_text_parse(pp, pend, rows);
        if (rc == FAIL) goto error;
        if (rc == BAIL) goto leave;
    }
    /* the ledger list's total size within int64 (extract.total_size) */
    int64_t total = 0;
    if (!cursor) {
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(rows); k++) {
            PyObject *size = PyTuple_GET_ITEM(PyList_GET_ITEM(rows, k), 2);
            if (size == Py_None) continue;
            int64_t v = PyLong_AsLongLong(size);
            if (v == -1 && PyErr_Occurred()) goto error;
            if (__builtin_add_overflow(total, v, &total)) goto leave;
        }
        if (PyList_GET_SIZE(props)) {
            PyObject *pt = PyList_AsTuple(props);
            pjson = pt ? PyObject_CallOneArg(props_json, pt) : NULL;
            Py_XDECREF(pt);
            if (!pjson) goto error;
            if (!PyUnicode_Check(pjson)) goto leave;
        }
    }
    /* the znodes row's values must fit their columns: a str store and path, every stat an int in its
       column's range; else the per-znode path decides */
    Py_ssize_t stn = 0;
    const char *stp = PyUnicode_CheckExact(store) ? PyUnicode_AsUTF8AndSize(store, &stn) : NULL;
    if (!stp) {
        PyErr_Clear();
        goto leave;
    }
    char sha[64];
    sha256_hex((const uint8_t *)d, (size_t)dn, sha);
    Py_ssize_t codec_n;
    const char *codec_s = PyUnicode_AsUTF8AndSize(codec, &codec_n);
    if (!codec_s) goto error;
    Py_ssize_t base_n;
    int64_t part = partition_of(local, local_n, &base_n);
    const char *TP = PERSISTENT_PREFIX;
    const size_t tpn = sizeof(PERSISTENT_PREFIX) - 1;
    char topic[1024];
    size_t topic_n = tpn + (size_t)nsp_n + 1 + (size_t)local_n;
    if (topic_n > sizeof topic) goto leave;
    int sys = 0, has_compacted = 0;
    int64_t compacted_v = 0;
    if (cursor) {
        /* pulsar_names.system_cursor_reason: the name as stored, then (escaped) as decoded */
        sys = is_system_name(sub, sub_n, names, prefixes) ||
              (sub_escaped && is_system_name(subd, subd_n, names, prefixes));
        Py_ssize_t cn;
        const char *cp = PyUnicode_AsUTF8AndSize(compacted, &cn);
        if (!cp) goto error;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(props) && !has_compacted; k++) {
            PyObject *kv = PyList_GET_ITEM(props, k);
            Py_ssize_t kn;
            const char *kp = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(kv, 0), &kn);
            if (!kp) goto error;
            if (kn == cn && memcmp(kp, cp, (size_t)cn) == 0) {
                has_compacted = 1;
                compacted_v = PyLong_AsLongLong(PyTuple_GET_ITEM(kv, 1));
            }
        }
    }
    /* every check passed: append the rows (a failure from here on is out of memory) */
    taken = 1;
    int bad = 0;
    bad |= znode_cols(t[0], stp, stn, p, n, sv, sha, cursor ? "cursor" : "managed-ledger") != 0;
    memcpy(topic, TP, tpn);
    memcpy(topic + tpn, nsp, (size_t)nsp_n);
    topic[tpn + (size_t)nsp_n] = '/';
    memcpy(topic + tpn + (size_t)nsp_n + 1, local, (size_t)local_n);
    if (!cursor) {
        Col *c = t[1];
        Py_ssize_t nrows = PyList_GET_SIZE(rows);
        bad |= col_str(&c[0], p, (size_t)n);
        bad |= col_str(&c[1], p + ML_ROOT_LEN, (size_t)n - ML_ROOT_LEN);
        bad |= col_str(&c[2], nsp, (size_t)ln[0]);
        bad |= col_str(&c[3], nsp, (size_t)nsp_n);
        bad |= col_bool(&c[4], v1);
        bad |= col_str(&c[5], enc, (size_t)enc_n);
        bad |= col_str(&c[6], local, (size_t)local_n);
        bad |= col_str(&c[7], topic, topic_n);
        bad |= col_str3(&c[8], topic, topic_n - (size_t)local_n, local, (size_t)base_n, NULL, 0);
        bad |= col_int(&c[9], part);
        bad |= col_int(&c[10], sv[4]) | col_int(&c[11], sv[1]) | col_int(&c[12], sv[2]) | col_int(&c[13], sv[3]);
        bad |= col_int(&c[14], sv[8]);
        Py_ssize_t fn;
        const char *fs = PyUnicode_AsUTF8AndSize(format, &fn);
        bad |= !fs || col_str(&c[15], fs, (size_t)fn);
        bad |= col_str(&c[16], codec_s, (size_t)codec_n);
        bad |= col_int(&c[17], nrows);
        bad |= col_int(&c[18], total);
        if (nrows) {
            bad |= col_append(&c[19], PyTuple_GET_ITEM(PyList_GET_ITEM(rows, nrows - 1), 0));
        } else {
            bad |= col_opt_int(&c[19], 0, 0);
        }
        bad |= col_bool(&c[20], terminated);
        if (pjson) {
            Py_ssize_t jn;
            const char *js = PyUnicode_AsUTF8AndSize(pjson, &jn);
            bad |= !js || col_str(&c[21], js, (size_t)jn);
        } else {
            bad |= col_str(&c[21], "{}", 2);
        }
        Col *l = t[2];
        for (Py_ssize_t k = 0; k < nrows; k++) {
            PyObject *row = PyList_GET_ITEM(rows, k);
            bad |= col_str(&l[0], p, (size_t)n);
            bad |= col_str(&l[1], topic, topic_n);
            bad |= col_str(&l[2], nsp, (size_t)nsp_n);
            bad |= col_int(&l[3], k);
            for (int j = 0; j < 4; j++) bad |= col_append(&l[4 + j], PyTuple_GET_ITEM(row, j));
            bad |= col_bool(&l[8], k == nrows - 1);
            for (int j = 4; j < 7; j++) bad |= col_append(&l[5 + j], PyTuple_GET_ITEM(row, j));
        }
    } else {
        Col *c = t[3];
        Py_ssize_t nranges = PyList_GET_SIZE(rows);
        bad |= col_str(&c[0], p, (size_t)n);
        bad |= col_str(&c[1], p, (size_t)ml_path_n);
        bad |= col_str(&c[2], topic, topic_n);
        bad |= col_str(&c[3], nsp, (size_t)nsp_n);
        bad |= col_str(&c[4], sub, (size_t)sub_n);
        bad |= col_str(&c[5], subd, (size_t)subd_n);
        bad |= col_bool(&c[6], sys);
        bad |= col_int(&c[7], scalars[1]);
        bad |= col_opt_int(&c[8], has[2] && has[3], scalars[2]);
        bad |= col_opt_int(&c[9], has[2] && has[3], scalars[3]);
        bad |= col_opt_int(&c[10], has[6], scalars[6]);
        bad |= col_int(&c[11], nranges);
        bad |= col_int(&c[12], batched);
        bad |= col_opt_int(&c[13], has_compacted, compacted_v);
        bad |= col_int(&c[14], sv[4]) | col_int(&c[15], sv[1]) | col_int(&c[16], sv[2]) | col_int(&c[17], sv[3]);
        bad |= col_int(&c[18], sv[8]);
        bad |= col_str(&c[19], codec_s, (size_t)codec_n);
        Col *a = t[4];
        for (Py_ssize_t k = 0; k < nranges; k++) {
            PyObject *row = PyList_GET_ITEM(rows, k);
            bad |= col_str(&a[0], p, (size_t)n);
            bad |= col_str(&a[1], topic, topic_n);
            bad |= col_str(&a[2], subd, (size_t)subd_n);
            bad |= col_int(&a[3], k);
            for (int j = 0; j < 4; j++) bad |= col_append(&a[4 + j], PyTuple_GET_ITEM(row, j));
        }
        Col *q = t[5];
        for (int pass = 0; pass < 2; pass++) {
            PyObject *list = pass ? sprops : props;
            for (Py_ssize_t k = 0; k < PyList_GET_SIZE(list); k++) {
                PyObject *kv = PyList_GET_ITEM(list, k);
                Py_ssize_t kn, vn;
                const char *kp = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(kv, 0), &kn);
                char num[32];
                const char *vp;
                if (pass) {
                    vp = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(kv, 1), &vn);
                } else {
                    vn = snprintf(num, sizeof num, "%lld", PyLong_AsLongLong(PyTuple_GET_ITEM(kv, 1)));
                    vp = num;
                }
                if (!kp || !vp) {
                    bad = 1;
                    continue;
                }
                bad |= col_str(&q[0], p, (size_t)n);
                bad |= col_str(&q[1], topic, topic_n);
                bad |= col_str(&q[2], subd, (size_t)subd_n);
                bad |= pass ? col_str(&q[3], "string", 6) : col_str(&q[3], "long", 4);
                bad |= col_str(&q[4], kp, (size_t)kn);
                bad |= col_str(&q[5], vp, (size_t)vn);
                bad |= pass ? col_opt_int(&q[6], has_bucket[k], bucket_v[k]) : col_opt_int(&q[6], 0, 0);
            }
        }
    }
    /* the scope: /managed-ledgers/<t>/<ns> (V2), /managed-ledgers/<p>/<c>/<ns> (V1) */
    bad |= scopes_add(sc, p, st[v1 ? 2 : 1] + ln[v1 ? 2 : 1]);
    if (bad) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto error;
    }
    *mz_out = mz;
    goto leave_rows;
error:
    taken = -1;
    goto leave_rows;
leave:
    taken = 0;
leave_rows:
    Py_XDECREF(plain);
    Py_XDECREF(codec);
    Py_XDECREF(rows);
    Py_XDECREF(props);
    Py_XDECREF(sprops);
    Py_XDECREF(pjson);
    if (taken == 0 && PyErr_Occurred()) taken = -1;
    return taken;
}

static PyObject *ml_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if ((nargs != 5 && nargs != 6) || !PyTuple_Check(args[3]) || PyTuple_GET_SIZE(args[3]) != ML_TABLES ||
        !PyTuple_Check(args[4]) || PyTuple_GET_SIZE(args[4]) != 8 || !PyTuple_Check(PyTuple_GET_ITEM(args[4], 2)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(args[4], 3)) || !PyUnicode_Check(PyTuple_GET_ITEM(args[4], 4)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(args[4], 5)) || !PyTuple_Check(PyTuple_GET_ITEM(args[4], 6)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(args[4], 6)) != ML_CODECS || !PyTuple_Check(PyTuple_GET_ITEM(args[4], 7)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(args[4], 7)) != ML_CODECS) {
        PyErr_SetString(PyExc_TypeError, "ml_batch(store, reads: list | packed chunk, max_bytes: int, specs: 6-tuple, "
                                         "(unwrap, props_json, names, prefixes, bucket prefix, compacted name, "
                                         "decompressors by codec number, codec names)[, idx])");
        return NULL;
    }
    PyObject *store = args[0], *specs = args[3], *helpers = args[4];
    long long max_bytes = PyLong_AsLongLong(args[2]);
    if (max_bytes == -1 && PyErr_Occurred()) return NULL;
    Reads R;
    if (reads_open(args[1], nargs == 6 ? args[5] : Py_None, &R) < 0) return NULL;
    Col cols[19 + 22 + 12 + 20 + 8 + 7];
    Col *t[ML_TABLES];
    int ok = 1, ncols = 0;
    for (int k = 0; k < ML_TABLES; k++) {
        Py_ssize_t sn;
        PyObject *spec = PyTuple_GET_ITEM(specs, k);
        const char *s = PyUnicode_Check(spec) ? PyUnicode_AsUTF8AndSize(spec, &sn) : NULL;
        t[k] = cols + ncols;
        if (!s || sn != ML_WIDTHS[k]) {
            ok = 0;
            break;
        }
        for (int j = 0; j < ML_WIDTHS[k]; j++) ok &= col_init(&cols[ncols++], s[j]) == 0;
    }
    Scopes sc = {PyDict_New(), NULL, 0, {0}, 0};
    PyObject *rest = PyList_New(0), *result = NULL;
    Py_ssize_t handled = 0;
    int64_t lo = 0, hi = 0;
    if (!ok || !rest || !sc.dict) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "ml_batch: the column specs do not match the tables");
        goto done;
    }
    for (Py_ssize_t k = 0; k < reads_len(&R); k++) {
        int64_t mz = 0;
        Py_ssize_t i;
        CRead c;
        int rc = reads_at(&R, k, &i, &c);
        if (rc > 0) rc = ml_take(&c, t, store, max_bytes, helpers, &sc, &mz);
        if (rc < 0 || batch_note(rc, i, mz, rest, &handled, &lo, &hi) < 0) goto done;
    }
    if (scopes_flush(&sc) < 0) goto done;
    result = tables_result(t, ML_TABLES, ML_WIDTHS, handled, rest, lo, hi, sc.dict);
done:
    reads_close(&R);
    for (int k = 0; k < ncols; k++) col_free(&cols[k]);
    Py_XDECREF(rest);
    Py_XDECREF(sc.dict);
    return result;
}

/* ---- schema_batch: the schema locators of a chunk of reads as Arrow buffers ------------------------------------
 * schema_batch(store, reads, ledgers_root, max_bytes, znodes_spec, schema_index_spec)
 *   -> (n, rest, znodes columns, schema_index columns, schema_index rows, min mzxid, max mzxid, scopes)
 *
 * Takes /schemas/<tenant>/<ns>/<name> znodes (scrape.classify: kind "schema", scope /schemas/<tenant>/<ns>) whose
 * value is a plain well-formed binary SchemaLocator (pulsar SchemaStorageFormat.proto: info = 1 and repeated
 * index = 2, each an IndexEntry {version = 1, position = 2 {ledgerId = 1, entryId = 2}, hash = 3}, every field
 * present once) and whose name needs no URL-decoding: exactly scrape.extract._schema's rows (the index entries,
 * then info when no entry has its version). Anything else -- an unknown or repeated field, a missing one, an
 * escaped or empty name segment, a path that is also under the ledgers root -- is left to the per-znode path. */

#define SCHEMA_COLS 10
#define MAX_SCHEMA_ENTRIES 1024

typedef struct {
    int64_t version, ledger, entry;
} SchemaEntry;

/* PositionInfo: ledgerId and entryId, each exactly once. */
static int schema_position(const uint8_t *p, const uint8_t *end, SchemaEntry *e) {
    int has[3] = {0, 0, 0};
    while (p < end) {
        uint64_t key, v;
        if (read_varint(&p, end, &key) < 0 || (key != ((1 << 3) | 0) && key != ((2 << 3) | 0))) return -1;
        int f = (int)(key >> 3);
        if (has[f] || read_varint(&p, end, &v) < 0) return -1;
        has[f] = 1;
        if (f == 1) e->ledger = (int64_t)v; else e->entry = (int64_t)v;
    }
    return has[1] && has[2] ? 0 : -1;
}

/* IndexEntry: version, position and hash, each exactly once. */
static int schema_entry(const uint8_t *p, const uint8_t *end, SchemaEntry *e) {
    int has[4] = {0, 0, 0, 0};
    while (p < end) {
        uint64_t key, v;
        Slice s;
        if (read_varint(&p, end, &key) < 0) return -1;
        if (key == ((1 << 3) | 0)) {
            if (has[1] || read_varint(&p, end, &v) < 0) return -1;
            e->version = (int64_t)v;
            has[1] = 1;
        } else if (key == ((2 << 3) | 2)) {
            if (has[2] || read_slice(&p, end, &s) < 0 || schema_position(s.p, s.p + s.n, e) < 0) return -1;
            has[2] = 1;
        } else if (key == ((3 << 3) | 2)) {
            if (has[3] || read_slice(&p, end, &s) < 0) return -1;
            has[3] = 1;
        } else {
            return -1;
        }
    }
    return has[1] && has[2] && has[3] ? 0 : -1;
}

/* SchemaLocator: the rows' entries in order (index, then info when no index entry has its version) and info's
 * version; the count, or -1. */
static int schema_locator(const uint8_t *p, const uint8_t *end, SchemaEntry *out, int64_t *latest) {
    SchemaEntry info;
    int has_info = 0, n = 0;
    while (p < end) {
        uint64_t key;
        Slice s;
        if (read_varint(&p, end, &key) < 0 || read_slice(&p, end, &s) < 0) return -1;
        if (key == ((1 << 3) | 2)) {
            if (has_info || schema_entry(s.p, s.p + s.n, &info) < 0) return -1;
            has_info = 1;
        } else if (key == ((2 << 3) | 2)) {
            if (n >= MAX_SCHEMA_ENTRIES - 1 || schema_entry(s.p, s.p + s.n, &out[n]) < 0) return -1;
            n++;
        } else {
            return -1;
        }
    }
    if (!has_info) return -1;
    int seen = 0;
    for (int i = 0; i < n && !seen; i++) seen = out[i].version == info.version;
    if (!seen) out[n++] = info;
    *latest = info.version;
    return n;
}

/* One read: 1 taken, 0 left to the per-znode path, -1 a Python error. */
static int schema_take(const CRead *r, Col *zc, Col *sc, const char *st, Py_ssize_t stn, const char *root,
                       Py_ssize_t rn, long long max_bytes, Scopes *scopes, int64_t *mz) {
    static const char SCHEMAS[] = "/schemas/";
    static SchemaEntry entries[MAX_SCHEMA_ENTRIES];
    const char *p = r->path;
    Py_ssize_t n = r->pn, k = (Py_ssize_t)sizeof SCHEMAS - 1;
    if (n <= k || memcmp(p, SCHEMAS, (size_t)k) != 0) return 0;
    /* classify looks under /managed-ledgers and the ledgers root first */
    if (n > rn && memcmp(p, root, (size_t)rn) == 0 && p[rn] == '/') return 0;
    Py_ssize_t cut[2], nc = 0;
    for (Py_ssize_t i = k; i < n; i++) {
        if (p[i] != '/') continue;
        if (nc == 2) return 0;
        cut[nc++] = i;
    }
    if (nc != 2 || cut[0] == k || cut[1] == cut[0] + 1 || cut[1] == n - 1) return 0; /* an empty segment */
    const char *enc = p + cut[1] + 1;
    Py_ssize_t enc_n = n - cut[1] - 1;
    if (cut[1] >= (Py_ssize_t)sizeof scopes->buf) return 0;
    /* the topic's local name: names.decode, as the topic batch decodes its names (to valid UTF-8 only) */
    char base_buf[512];
    const char *base = enc;
    Py_ssize_t base_n = enc_n;
    if (has_escape(enc, enc_n)) {
        if (!url_decode(enc, enc_n, base_buf, (Py_ssize_t)sizeof base_buf, &base_n)) return 0; /* Python's */
        base = base_buf;
    }
    const int64_t *s = r->s;
    int64_t latest = 0;
    if (s[8] > max_bytes || r->dn > max_bytes) return 0;
    const uint8_t *d = r->data;
    int ne = schema_locator(d, d + r->dn, entries, &latest);
    if (ne < 0) return 0;
    char sha[64];
    sha256_hex(d, (size_t)r->dn, sha);
    int bad = znode_cols(zc, st, stn, p, n, s, sha, "schema");
    const char *ns = p + k; /* <tenant>/<ns> */
    size_t ns_n = (size_t)(cut[1] - k);
    for (int i = 0; i < ne && !bad; i++) {
        bad |= col_str(&sc[0], p, (size_t)n) | col_str(&sc[1], ns, (size_t)(n - k)) | col_str(&sc[2], ns, ns_n);
        bad |= col_str3(&sc[3], "persistent://", 13, ns, ns_n + 1, base, (size_t)base_n);
        bad |= col_int(&sc[4], s[4]) | col_int(&sc[5], s[1]) | col_int(&sc[6], latest);
        bad |= col_int(&sc[7], entries[i].version) | col_int(&sc[8], entries[i].ledger);
        bad |= col_int(&sc[9], entries[i].entry);
    }
    if (bad || scopes_add(scopes, p, cut[1]) < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    *mz = s[1];
    return 1;
}

typedef int (*TakeFn)(const CRead *r, Col *zc, Col *xc, const char *st, Py_ssize_t stn, const char *root,
                      Py_ssize_t rn, long long max_bytes, Scopes *scopes, int64_t *mz);

static int bk_take_scoped(const CRead *r, Col *zc, Col *bc, const char *st, Py_ssize_t stn, const char *root,
                          Py_ssize_t rn, long long max_bytes, Scopes *scopes, int64_t *mz) {
    (void)scopes;
    return bk_take(r, zc, bc, st, stn, root, rn, max_bytes, mz);
}

#define MAX_X_COLS (BK_COLS > SCHEMA_COLS ? BK_COLS : SCHEMA_COLS)

/* bk_batch and schema_batch: (store, reads, ledgers_root, max_bytes, znodes_spec, table_spec); each read `take`
 * accepts gives a znodes row and a row of its table, the others are returned by index for the per-znode path.
 * -> (n, rest, znodes columns, table columns, min mzxid, max mzxid), and with `scoped` (schema_batch) the table's
 * row count before the zxids and the scope counts after them. */
static PyObject *two_table_batch(PyObject *const *args, Py_ssize_t nargs, const char *name, const char *xwant,
                                 int xcols, TakeFn take, int scoped) {
    if ((nargs != 6 && nargs != 7) || !PyUnicode_Check(args[2]) || !PyUnicode_Check(args[4]) ||
        !PyUnicode_Check(args[5])) {
        PyErr_Format(PyExc_TypeError,
                     "%s(store, reads: list | packed chunk, ledgers_root: str, max_bytes: int, znodes_spec, table_spec"
                     "[, idx])", name);
        return NULL;
    }
    PyObject *store = args[0];
    Py_ssize_t rn, zn, xn, stn = 0;
    const char *root = PyUnicode_AsUTF8AndSize(args[2], &rn);
    const char *zspec = PyUnicode_AsUTF8AndSize(args[4], &zn);
    const char *xspec = PyUnicode_AsUTF8AndSize(args[5], &xn);
    long long max_bytes = PyLong_AsLongLong(args[3]);
    if (!root || !zspec || !xspec || (max_bytes == -1 && PyErr_Occurred())) return NULL;
    if (zn != ZNODE_COLS || xn != xcols || strcmp(zspec, "ssssiiiiqqqqqiiqssS") != 0 || strcmp(xspec, xwant) != 0) {
        PyErr_Format(PyExc_ValueError, "%s: the column specs do not match the tables", name);
        return NULL;
    }
    /* a store that is not a str (or does not encode) fits no row: everything goes to the per-znode path */
    const char *st = PyUnicode_CheckExact(store) ? PyUnicode_AsUTF8AndSize(store, &stn) : NULL;
    if (!st) PyErr_Clear();
    Reads R;
    if (reads_open(args[1], nargs == 7 ? args[6] : Py_None, &R) < 0) return NULL;
    Col zc[ZNODE_COLS], xc[MAX_X_COLS];
    int ok = 1;
    for (int k = 0; k < ZNODE_COLS; k++) ok &= col_init(&zc[k], zspec[k]) == 0;
    for (int k = 0; k < xcols; k++) ok &= col_init(&xc[k], xspec[k]) == 0;
    Scopes scopes = {scoped ? PyDict_New() : NULL, NULL, 0, {0}, 0};
    PyObject *rest = PyList_New(0), *result = NULL;
    Py_ssize_t handled = 0;
    int64_t lo = 0, hi = 0;
    if (!ok || !rest || (scoped && !scopes.dict)) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < reads_len(&R); k++) {
        int64_t mz = 0;
        Py_ssize_t i;
        CRead c;
        int rc = reads_at(&R, k, &i, &c);
        if (rc > 0) rc = st ? take(&c, zc, xc, st, stn, root, rn, max_bytes, &scopes, &mz) : 0;
        if (rc < 0 || batch_note(rc, i, mz, rest, &handled, &lo, &hi) < 0) goto done;
    }
    if (scoped && scopes_flush(&scopes) < 0) goto done;
    {
        PyObject *zl = PyList_New(ZNODE_COLS), *xl = PyList_New(xcols);
        int bad = !zl || !xl;
        for (int k = 0; k < ZNODE_COLS && !bad; k++) {
            PyObject *c = col_result(&zc[k]);
            if (!c) bad = 1; else PyList_SET_ITEM(zl, k, c);
        }
        for (int k = 0; k < xcols && !bad; k++) {
            PyObject *c = col_result(&xc[k]);
            if (!c) bad = 1; else PyList_SET_ITEM(xl, k, c);
        }
        if (bad) {
            Py_XDECREF(zl);
            Py_XDECREF(xl);
        } else if (scoped && handled) {
            result = Py_BuildValue("(nONNnLLO)", handled, rest, zl, xl, xc[0].n, (long long)lo, (long long)hi,
                                   scopes.dict);
        } else if (scoped) {
            result = Py_BuildValue("(nONNnOOO)", handled, rest, zl, xl, xc[0].n, Py_None, Py_None, scopes.dict);
        } else if (handled) {
            result = Py_BuildValue("(nONNLL)", handled, rest, zl, xl, (long long)lo, (long long)hi);
        } else {
            result = Py_BuildValue("(nONNOO)", handled, rest, zl, xl, Py_None, Py_None);
        }
    }
done:
    reads_close(&R);
    for (int k = 0; k < ZNODE_COLS; k++) col_free(&zc[k]);
    for (int k = 0; k < xcols; k++) col_free(&xc[k]);
    Py_XDECREF(rest);
    Py_XDECREF(scopes.dict);
    return result;
}

static PyObject *bk_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return two_table_batch(args, nargs, "bk_batch", "sqsisqqiiiSqQiqqqisSSSSSSsls", BK_COLS, bk_take_scoped, 0);
}

static PyObject *schema_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return two_table_batch(args, nargs, "schema_batch", "ssssiqqqqq", SCHEMA_COLS, schema_take, 1);
}

/* ---- misc_batch: the directories, partitioned-topic metadata and bundles of a chunk of reads -------------------
 * misc_batch(store, reads, ledgers_root, max_bytes, specs[, idx])
 *   -> (n, rest, tables, row counts, min mzxid, max mzxid, scope counts)
 *
 * specs: the column specs of znodes, partitioned_topics, bundle_owners and bundle_data. What the topic, ledger and
 * schema batches leave is mostly these (a 50K-topic tree: 11K of 340K znodes, each ~10 us on the per-znode path):
 * the directories (scrape.classify kinds ml-dir, schema-dir, partitioned-dir, namespace-dir, bundle-data-dir: a
 * znodes row only, whatever their value), the partitioned-topic metadata, the bundle owners and the bundle load data.
 * A read is taken only when its ASCII path has no empty segment, lies outside the ledgers root (classify looks there
 * first), classifies as one of those kinds by classify's own rules, and -- for the three kinds with an extractor --
 * is within the decode limit, has a bundle range extract._range accepts, and a value that is empty (bundles) or a
 * JSON document of the restricted form jdoc reads (printable ASCII, no string escapes, RFC 8259 grammar, one object
 * and nothing after it but whitespace, nesting depth <= 32, numbers <= 40 characters), with only the field values
 * this reads plainly (partitioned topic: no "properties", "partitions" a JSON null or 0..999999999 at most once,
 * "deleted" true/false/null at most once; bundle owner: "disabled" true/false/null). Everything else goes back to the
 * per-znode path (scrape.sink.SnapshotSink.node), which decides every error: the rows are exactly
 * scrape.extract's _partitioned, _bundle_owner and _bundle_data rows and the znodes row znode_row builds. */

#define MISC_TABLES 4
#define MISC_MAX_SEG 8
#define JSON_MAX_DEPTH 32
#define JSON_MAX_NUMBER 40
static const int MISC_WIDTHS[MISC_TABLES] = {19, 14, 14, 10};
static const char *MISC_SPECS[MISC_TABLES] = {"ssssiiiiqqqqqiiqssS", "ssssssibiqqqiS", "sssqqqSSbiqqqi",
                                              "sssQQiqqqi"};

typedef struct {
    const char *p[MISC_MAX_SEG];
    Py_ssize_t n[MISC_MAX_SEG];
    int count;
} Segs;

/* classify._under with its root: 1 when path is root or below it (segments in s: each non-empty, at most
 * MISC_MAX_SEG), 0 when not under it, -1 when under it in a form left to Python (an empty segment, too many). */
static int segs_below(const char *p, Py_ssize_t n, const char *root, Py_ssize_t rn, Segs *s) {
    s->count = 0;
    if (n == rn && memcmp(p, root, (size_t)rn) == 0) return 1;
    if (n <= rn || memcmp(p, root, (size_t)rn) != 0 || p[rn] != '/') return 0;
    Py_ssize_t start = rn + 1;
    for (Py_ssize_t i = start; i <= n; i++) {
        if (i < n && p[i] != '/') continue;
        if (i == start || s->count == MISC_MAX_SEG) return -1;
        s->p[s->count] = p + start;
        s->n[s->count++] = i - start;
        start = i + 1;
    }
    return 1;
}

/* classify.is_bundle_range (0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}, whole) and extract._range's bounds */
static int bundle_range(const char *p, Py_ssize_t n, int64_t *lower, int64_t *upper) {
    if (n != 21 || p[0] != '0' || p[1] != 'x' || p[10] != '_' || p[11] != '0' || p[12] != 'x') return 0;
    int64_t v[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 8; i++) {
            int h = hexval(p[2 + 11 * k + i]);
            if (h < 0) return 0;
            v[k] = v[k] * 16 + h;
        }
    }
    *lower = v[0];
    *upper = v[1];
    return 1;
}

/* ---- jdoc: a restricted JSON reader (what it accepts, Python's json and Jackson read alike) ---- */
typedef struct {
    char type; /* s string, t true, f false, n null, # number, { object, [ array */
    const uint8_t *p; /* a string's content, a number's text */
    Py_ssize_t n;
} JVal;

#define WATCH_KEYS 3
typedef struct {
    const char *keys[WATCH_KEYS];
    JVal val[WATCH_KEYS]; /* each key's last value at the top level (a dict keeps the last) */
    int count[WATCH_KEYS];
} Watch;

static const uint8_t *jws(const uint8_t *p, const uint8_t *e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static const uint8_t *jstr(const uint8_t *p, const uint8_t *e) { /* at '"': after the closing quote, or NULL */
    for (p++; p < e && *p != '"'; p++) {
        if (*p < 0x20 || *p > 0x7E || *p == '\\') return NULL;
    }
    return p < e ? p + 1 : NULL;
}

static const uint8_t *jdigits(const uint8_t *p, const uint8_t *e) {
    if (p >= e || *p < '0' || *p > '9') return NULL;
    while (p < e && *p >= '0' && *p <= '9') p++;
    return p;
}

static const uint8_t *jnum(const uint8_t *p, const uint8_t *e) {
    const uint8_t *s = p;
    if (p < e && *p == '-') p++;
    if (p < e && *p == '0') {
        p++;
    } else if (!(p = jdigits(p, e))) {
        return NULL;
    }
    if (p < e && *p == '.' && !(p = jdigits(p + 1, e))) return NULL;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (!(p = jdigits(p, e))) return NULL;
    }
    return p - s <= JSON_MAX_NUMBER ? p : NULL;
}

static const uint8_t *jcompound(const uint8_t *p, const uint8_t *e, int depth, Watch *w);

static const uint8_t *jvalue(const uint8_t *p, const uint8_t *e, int depth, JVal *v) {
    if (p >= e) return NULL;
    v->p = p;
    v->n = 0;
    v->type = (char)*p;
    switch (*p) {
    case '"': {
        const uint8_t *q = jstr(p, e);
        v->type = 's';
        if (q) {
            v->p = p + 1;
            v->n = q - p - 2;
        }
        return q;
    }
    case '{':
    case '[':
        return depth < JSON_MAX_DEPTH ? jcompound(p, e, depth + 1, NULL) : NULL;
    case 't':
        return e - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
    case 'f':
        return e - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
    case 'n':
        return e - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
    default: {
        const uint8_t *q = jnum(p, e);
        v->type = '#';
        v->n = q ? q - p : 0;
        return q;
    }
    }
}

/* an object or array at p ('{' or '['): after it, or NULL; w (an object's top level) records the watched keys */
static const uint8_t *jcompound(const uint8_t *p, const uint8_t *e, int depth, Watch *w) {
    int obj = *p == '{';
    uint8_t close = obj ? '}' : ']';
    p = jws(p + 1, e);
    if (p < e && *p == close) return p + 1;
    for (;;) {
        const uint8_t *kp = NULL;
        Py_ssize_t kn = 0;
        if (obj) {
            if (p >= e || *p != '"') return NULL;
            const uint8_t *q = jstr(p, e);
            if (!q) return NULL;
            kp = p + 1;
            kn = q - p - 2;
            p = jws(q, e);
            if (p >= e || *p != ':') return NULL;
            p = jws(p + 1, e);
        }
        JVal v;
        if (!(p = jvalue(p, e, depth, &v))) return NULL;
        for (int k = 0; w && k < WATCH_KEYS && w->keys[k]; k++) {
            if ((size_t)kn == strlen(w->keys[k]) && memcmp(kp, w->keys[k], (size_t)kn) == 0) {
                w->val[k] = v;
                w->count[k]++;
            }
        }
        p = jws(p, e);
        if (p >= e) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = jws(p + 1, e);
    }
}

/* 1 when d[0:n] is whitespace, one object, whitespace (the watched keys recorded), else 0 */
static int jdoc(const uint8_t *d, Py_ssize_t n, Watch *w) {
    const uint8_t *e = d + n, *p = jws(d, e);
    if (p >= e || *p != '{') return 0;
    p = jcompound(p, e, 1, w);
    return p && jws(p, e) == e;
}

/* A watched boolean as bool(value) reads it after a Jackson-free dict lookup / _boolean: absent or null 0, true 1,
 * false 0; -1 for anything else (left to Python). */
static int jbool(const Watch *w, int k) {
    if (!w->count[k]) return 0;
    switch (w->val[k].type) {
    case 't':
        return 1;
    case 'f':
    case 'n':
        return 0;
    default:
        return -1;
    }
}

/* One read: 1 taken, 0 left to the per-znode path, -1 a Python error. */
static int misc_take(const CRead *r, Col **t, const char *st, Py_ssize_t stn, const char *root, Py_ssize_t rn,
                     long long max_bytes, Scopes *sc, int64_t *mz) {
    static const char ML[] = "/managed-ledgers", SCH[] = "/schemas", PT[] = "/admin/partitioned-topics",
                      NS[] = "/namespace", BD[] = "/loadbalance/bundle-data";
    const char *p = r->path, *kind;
    Py_ssize_t n = r->pn, scope_n;
    const int64_t *s = r->s;
    Segs g;
    int table = 0, in = segs_below(p, n, ML, (Py_ssize_t)sizeof ML - 1, &g);
    int64_t lower = 0, upper = 0;
    if (in < 0) return 0;
    if (in) { /* classify._ml_kind / _ml_scope: only its directories are taken here */
        int c = g.count, dir;
        if (c >= 3 && seg_is(g.p[2], g.n[2], "persistent")) {
            dir = c == 3;
        } else if (c >= 4 && seg_is(g.p[3], g.n[3], "persistent")) {
            dir = c == 4;
        } else {
            dir = c <= 3;
        }
        if (!dir) return 0;
        kind = "ml-dir";
        if (c < 2) {
            scope_n = (Py_ssize_t)sizeof ML - 1;
        } else {
            int last = c >= 3 && !seg_is(g.p[2], g.n[2], "persistent") ? 2 : 1;
            scope_n = (g.p[last] - p) + g.n[last];
        }
    } else {
        /* classify looks under the ledgers root next */
        if ((n == rn && memcmp(p, root, (size_t)rn) == 0) || (n > rn && memcmp(p, root, (size_t)rn) == 0 && p[rn] == '/'))
            return 0;
        int c;
        if ((in = segs_below(p, n, SCH, (Py_ssize_t)sizeof SCH - 1, &g)) != 0) {
            c = g.count;
            if (in < 0 || c >= 3) return 0; /* a schema (schema_batch's or Python's) */
            kind = "schema-dir";
            scope_n = c >= 2 ? (g.p[1] - p) + g.n[1] : (Py_ssize_t)sizeof SCH - 1;
        } else if ((in = segs_below(p, n, PT, (Py_ssize_t)sizeof PT - 1, &g)) != 0) {
            c = g.count;
            if (in < 0) return 0;
            scope_n = (Py_ssize_t)sizeof PT - 1;
            int d2 = c >= 3 && (seg_is(g.p[2], g.n[2], "persistent") || seg_is(g.p[2], g.n[2], "non-persistent"));
            int d3 = c >= 4 && (seg_is(g.p[3], g.n[3], "persistent") || seg_is(g.p[3], g.n[3], "non-persistent"));
            if ((c == 4 && d2) || (c == 5 && d3)) {
                kind = "partitioned-topic";
                table = 1;
            } else if (c <= 3 || (c == 4 && d3)) {
                kind = "partitioned-dir";
            } else {
                return 0; /* "other" */
            }
        } else if ((in = segs_below(p, n, NS, (Py_ssize_t)sizeof NS - 1, &g)) != 0 ||
                   (in = segs_below(p, n, BD, (Py_ssize_t)sizeof BD - 1, &g)) != 0) {
            int bd = n >= (Py_ssize_t)sizeof BD - 1 && memcmp(p, BD, sizeof BD - 1) == 0; /* which root matched */
            c = g.count;
            if (in < 0) return 0;
            scope_n = bd ? (Py_ssize_t)sizeof BD - 1 : (Py_ssize_t)sizeof NS - 1;
            if ((c == 3 || c == 4) && bundle_range(g.p[c - 1], g.n[c - 1], &lower, &upper)) {
                if (lower >= upper) return 0; /* extract._range's DecodeError */
                kind = bd ? "bundle-data" : "bundle-owner";
                table = bd ? 3 : 2;
            } else {
                kind = bd ? "bundle-data-dir" : "namespace-dir";
            }
        } else {
            return 0;
        }
    }
    if (scope_n >= (Py_ssize_t)sizeof sc->buf) return 0;
    const uint8_t *d = r->data;
    Py_ssize_t dn = r->dn;
    Watch w;
    memset(&w, 0, sizeof w);
    int64_t partitions = 0;
    int flag = 0; /* deleted, disabled */
    char local_buf[512], topic[2048];
    const char *local = NULL;
    Py_ssize_t local_n = 0, topic_n = 0;
    if (table) {
        if (s[8] > max_bytes || dn > max_bytes) return 0; /* extract.size_error */
    }
    if (table == 1) {
        w.keys[0] = "partitions";
        w.keys[1] = "deleted";
        w.keys[2] = "properties";
        if (!jdoc(d, dn, &w) || w.count[2] || w.count[0] > 1 || w.count[1] > 1) return 0;
        if (w.count[0] && w.val[0].type != 'n') {
            const JVal *v = &w.val[0];
            if (v->type != '#' || v->n > 9 || !all_digits((const char *)v->p, v->n) || (v->n > 1 && v->p[0] == '0'))
                return 0;
            for (Py_ssize_t i = 0; i < v->n; i++) partitions = partitions * 10 + (v->p[i] - '0');
        }
        if ((flag = jbool(&w, 1)) < 0) return 0;
        const char *enc = g.p[g.count - 1];
        Py_ssize_t enc_n = g.n[g.count - 1];
        local = enc;
        local_n = enc_n;
        if (has_escape(enc, enc_n)) {
            if (!url_decode(enc, enc_n, local_buf, (Py_ssize_t)sizeof local_buf, &local_n)) return 0; /* Python's */
            local = local_buf;
        }
        /* the topic: f"{s[-2]}://{namespace}/{local}" */
        const char *dom = g.p[g.count - 2], *ns = g.p[0];
        Py_ssize_t dom_n = g.n[g.count - 2], ns_n = (g.p[g.count - 3] + g.n[g.count - 3]) - ns;
        topic_n = dom_n + 3 + ns_n + 1 + local_n;
        if (topic_n > (Py_ssize_t)sizeof topic) return 0;
        memcpy(topic, dom, (size_t)dom_n);
        memcpy(topic + dom_n, "://", 3);
        memcpy(topic + dom_n + 3, ns, (size_t)ns_n);
        topic[dom_n + 3 + ns_n] = '/';
        memcpy(topic + dom_n + 4 + ns_n, local, (size_t)local_n);
    } else if (table == 2) {
        w.keys[0] = "nativeUrl";
        w.keys[1] = "httpUrl";
        w.keys[2] = "disabled";
        if (dn && !jdoc(d, dn, &w)) return 0;
        if ((flag = jbool(&w, 2)) < 0) return 0;
    } else if (table == 3) {
        if (dn && !jdoc(d, dn, NULL)) return 0;
    }
    char sha[64];
    sha256_hex(d, (size_t)dn, sha);
    int bad = znode_cols(t[0], st, stn, p, n, s, sha, kind);
    Col *x = t[table];
    if (table == 1) {
        /* path, tenant, namespace ("/".join(s[:-2])), encoded name, local name, topic, partitions, deleted, stat, json */
        const char *ns = g.p[0];
        size_t ns_n = (size_t)((g.p[g.count - 3] + g.n[g.count - 3]) - ns);
        bad |= col_str(&x[0], p, (size_t)n) | col_str(&x[1], g.p[0], (size_t)g.n[0]) | col_str(&x[2], ns, ns_n);
        bad |= col_str(&x[3], g.p[g.count - 1], (size_t)g.n[g.count - 1]) | col_str(&x[4], local, (size_t)local_n);
        bad |= col_str(&x[5], topic, (size_t)topic_n);
        bad |= col_int(&x[6], partitions) | col_bool(&x[7], flag);
        bad |= col_int(&x[8], s[4]) | col_int(&x[9], s[1]) | col_int(&x[10], s[2]) | col_int(&x[11], s[3]);
        bad |= col_int(&x[12], s[8]) | col_str(&x[13], (const char *)d, (size_t)dn);
    } else if (table == 2 || table == 3) {
        /* path, namespace ("/".join(s[:-1])), bundle range, lower, upper, [ephemeral owner, urls, disabled,] stat */
        const char *ns = g.p[0];
        size_t ns_n = (size_t)((g.p[g.count - 2] + g.n[g.count - 2]) - ns);
        bad |= col_str(&x[0], p, (size_t)n) | col_str(&x[1], ns, ns_n);
        bad |= col_str(&x[2], g.p[g.count - 1], (size_t)g.n[g.count - 1]) | col_int(&x[3], lower) | col_int(&x[4], upper);
        int k = 5;
        if (table == 2) {
            bad |= col_int(&x[5], s[7]);
            Slice u[2];
            for (int j = 0; j < 2; j++) {
                int is_str = w.count[j] && w.val[j].type == 's';
                u[j].p = w.val[j].p;
                u[j].n = w.val[j].n;
                bad |= col_opt_str(&x[6 + j], is_str ? &u[j] : NULL);
            }
            bad |= col_bool(&x[8], flag);
            k = 9;
        }
        bad |= col_int(&x[k], s[4]) | col_int(&x[k + 1], s[1]) | col_int(&x[k + 2], s[2]) | col_int(&x[k + 3], s[3]);
        bad |= col_int(&x[k + 4], s[8]);
    }
    if (bad || scopes_add(sc, p, scope_n) < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    *mz = s[1];
    return 1;
}

static PyObject *misc_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if ((nargs != 5 && nargs != 6) || !PyUnicode_Check(args[2]) || !PyTuple_Check(args[4]) ||
        PyTuple_GET_SIZE(args[4]) != MISC_TABLES) {
        PyErr_SetString(PyExc_TypeError, "misc_batch(store, reads: list | packed chunk, ledgers_root: str, max_bytes: "
                                         "int, specs: 4-tuple[, idx])");
        return NULL;
    }
    PyObject *store = args[0], *specs = args[4];
    Py_ssize_t rn, stn = 0;
    const char *root = PyUnicode_AsUTF8AndSize(args[2], &rn);
    long long max_bytes = PyLong_AsLongLong(args[3]);
    if (!root || (max_bytes == -1 && PyErr_Occurred())) return NULL;
    for (int k = 0; k < MISC_TABLES; k++) {
        PyObject *spec = PyTuple_GET_ITEM(specs, k);
        const char *sp = PyUnicode_Check(spec) ? PyUnicode_AsUTF8(spec) : NULL;
        if (!sp || strcmp(sp, MISC_SPECS[k]) != 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "misc_batch: the column specs do not match the tables");
            return NULL;
        }
    }
    /* a store that is not a str (or does not encode) fits no row: everything goes to the per-znode path */
    const char *st = PyUnicode_CheckExact(store) ? PyUnicode_AsUTF8AndSize(store, &stn) : NULL;
    if (!st) PyErr_Clear();
    Reads R;
    if (reads_open(args[1], nargs == 6 ? args[5] : Py_None, &R) < 0) return NULL;
    Col cols[19 + 14 + 14 + 10];
    Col *t[MISC_TABLES];
    int ok = 1, ncols = 0;
    for (int k = 0; k < MISC_TABLES; k++) {
        t[k] = cols + ncols;
        for (int j = 0; j < MISC_WIDTHS[k]; j++) ok &= col_init(&cols[ncols++], MISC_SPECS[k][j]) == 0;
    }
    Scopes sc = {PyDict_New(), NULL, 0, {0}, 0};
    PyObject *rest = PyList_New(0), *result = NULL;
    Py_ssize_t handled = 0;
    int64_t lo = 0, hi = 0;
    if (!ok || !rest || !sc.dict) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < reads_len(&R); k++) {
        int64_t mz = 0;
        Py_ssize_t i;
        CRead c;
        int rc = reads_at(&R, k, &i, &c);
        if (rc > 0) rc = st ? misc_take(&c, t, st, stn, root, rn, max_bytes, &sc, &mz) : 0;
        if (rc < 0 || batch_note(rc, i, mz, rest, &handled, &lo, &hi) < 0) goto done;
    }
    if (scopes_flush(&sc) < 0) goto done;
    result = tables_result(t, MISC_TABLES, MISC_WIDTHS, handled, rest, lo, hi, sc.dict);
done:
    reads_close(&R);
    for (int k = 0; k < ncols; k++) col_free(&cols[k]);
    Py_XDECREF(rest);
    Py_XDECREF(sc.dict);
    return result;
}

/* snap_walk(batch, start, ctx): zkdata.stream's pass-1 walk (load_partial) over batch[start:], the (path, data,
 * stat) node records snap_nodes parsed, on the same state the Python loop keeps (ctx, a list: the frame stack,
 * keep, keep_children, sessions, the doomed paths, the walked roots, unloaded, deferred, the list of reads not
 * handed over, its store, the hand-over size and the hand-over callable). It does exactly what the Python loop
 * body does for the common node and returns the index of the first node it did not take: the root, a node whose
 * parent is not on the stack (the Python body raises SnapshotCorrupt), a node to keep in the partial tree (its
 * path kept, its parent's children kept, or its ephemeral owner a closed session), and anything unexpected. The
 * Python body takes that one node and calls again, so every error and every kept node is decided in Python
 * (tests/unit/zkdata/test_stream_native.py pins the two equal). */
enum {
    W_STACK, W_KEEP, W_KEEP_CHILDREN, W_SESSIONS, W_DEAD, W_ROOTS, W_UNLOADED, W_DEFERRED, W_OUT, W_OUT_STORE,
    W_BATCH, W_HAND_OVER, W_SIZE
};
/* frame: [path, data, stat, children seen, kept node or None, store or None, under a doomed node, children kept] */
enum { F_PATH, F_DATA, F_STAT, F_SEEN, F_NODE, F_STORE, F_DOOMED, F_KEEP_CHILDREN, F_SIZE };

static inline int64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}

/* tree.client_owner: DataNode.getClientEphemeralOwner (containers and TTL owners read as 0) */
static inline int64_t client_owner_of(int64_t owner) {
    if (owner == INT64_MIN || (owner < 0 && ((uint64_t)owner >> 56) == 0xFF)) return 0;
    return owner;
}

/* ---- snap_walker: zkdata.stream's pass 1 (load_partial) natively, straight from the snapshot's bytes ---------
 *
 * snap_walker(tree, keep, keep_children, sessions, dead, roots, unloaded, deferred, originals, batch, cut,
 *             emit_packed, emit_reads, corrupt) -> a walker with
 *   feed(buf, pos, digest) -> (nodes walked, pos, done, digest sum, bad): snap_nodes' parse of buf[pos:] and the
 *       walk of each record as it is parsed; it stops at a record cut by the end of buf, after the terminating "/"
 *       (done), or before a negative path length or a data length below -1 (bad: the record-by-record reader
 *       decides, as when snap_nodes returns None);
 *   step(path, data, stat): one record given as objects (the record-by-record reader's);
 *   finish(): the frames left closed, the last chunk handed over.
 *
 * The pure loop of stream._load_partial (step, close) is the definition; this walks the same stack in C. A
 * node's path, data and stat are copied into its frame (no Python object per node); a node emitted at its close
 * goes as its packed record (scrape.packed's layout: path minus its first `cut` characters, data, the client stat
 * as close builds it) straight into the chunk handed to emit_packed(store, raw, count, max mtime) when it holds
 * `batch` reads or the store changes. Python objects are made only for the kept nodes (the partial tree: [data,
 * stat, children] in originals and in their parent's children; unloaded), the deferred nodes, the closed
 * sessions' ephemerals, the errors (corrupt(message), the pure loop's messages) and a path that is not UTF-8
 * (emit_reads(store, [(path, data, client stat)]), uncut: marshal's case). The members of keep, keep_children,
 * dead and roots (str) are read once into a C hash table of their bytes (str.encode("utf-8", "surrogateescape"):
 * the snapshot's own bytes). tests/unit/zkdata/test_stream_native.py holds it equal to the pure loop. */

#define WK_KEEP 1
#define WK_KC 2
#define WK_DEAD 4
#define WK_ROOT 8

typedef struct {
    uint64_t h;
    char *p; /* NULL: an empty slot */
    Py_ssize_t n;
    int flags, store;
} WKey;

typedef struct {
    char *buf; /* path, then data */
    size_t cap;
    Py_ssize_t pn, dn, seen;
    uint8_t stat[60];
    PyObject *node; /* the kept node [data, stat, children], or NULL */
    int store;      /* index in stores, -1: none */
    int doomed, kc;
} WFrame;

typedef struct {
    PyObject_HEAD
    WKey *keys;
    size_t kmask;
    PyObject *stores;       /* list of the store objects (deduplicated by equality) */
    PyObject *store_bytes;  /* their UTF-8 */
    PyObject *tree, *ephemerals, *sessions, *unloaded, *deferred, *originals, *emit_packed, *emit_reads, *corrupt;
    int any_sessions;
    WFrame *st;
    Py_ssize_t depth, cap;
    Buf out;
    Py_ssize_t out_n, batch, cut;
    int out_store;
    int64_t out_mtime;
} Walker;

static inline uint64_t wk_hash(const char *p, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, p, (size_t)n);
    h = (h ^ v) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

static WKey *wk_find(Walker *W, const char *p, Py_ssize_t n, uint64_t h) {
    if (!W->keys) return NULL;
    for (size_t i = (size_t)h & W->kmask;; i = (i + 1) & W->kmask) {
        WKey *k = &W->keys[i];
        if (!k->p) return k;
        if (k->h == h && k->n == n && memcmp(k->p, p, (size_t)n) == 0) return k;
    }
}

/* a member (str) into the table with flag; 0 ok, -1 error */
static int wk_add(Walker *W, PyObject *s, int flag, int store) {
    if (!PyUnicode_Check(s)) {
        PyErr_SetString(PyExc_TypeError, "snap_walker: a path that is not a str");
        return -1;
    }
    PyObject *b = PyUnicode_AsEncodedString(s, "utf-8", "surrogateescape");
    if (!b) return -1;
    const char *p = PyBytes_AS_STRING(b);
    Py_ssize_t n = PyBytes_GET_SIZE(b);
    uint64_t h = wk_hash(p, n);
    WKey *k = wk_find(W, p, n, h);
    if (!k->p) {
        k->p = (char *)malloc((size_t)n + 1);
        if (!k->p) {
            Py_DECREF(b);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(k->p, p, (size_t)n);
        k->n = n;
        k->h = h;
        k->flags = 0;
        k->store = -1;
    }
    Py_DECREF(b);
    k->flags |= flag;
    if (store >= 0) k->store = store;
    return 0;
}

static int wk_add_set(Walker *W, PyObject *set, int flag) {
    PyObject *it = PyObject_GetIter(set), *x;
    if (!it) return -1;
    while ((x = PyIter_Next(it))) {
        int rc = wk_add(W, x, flag, -1);
        Py_DECREF(x);
        if (rc < 0) {
            Py_DECREF(it);
            return -1;
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *wk_str(const char *p, Py_ssize_t n) { return PyUnicode_DecodeUTF8(p, n, "surrogateescape"); }

static void walker_dealloc(PyObject *self) {
    Walker *W = (Walker *)self;
    if (W->keys) {
        for (size_t i = 0; i <= W->kmask; i++) free(W->keys[i].p);
        free(W->keys);
    }
    for (Py_ssize_t i = 0; i < W->cap; i++) {
        free(W->st[i].buf);
        Py_XDECREF(W->st[i].node);
    }
    free(W->st);
    free(W->out.buf);
    Py_XDECREF(W->stores);
    Py_XDECREF(W->store_bytes);
    Py_XDECREF(W->tree);
    Py_XDECREF(W->ephemerals);
    Py_XDECREF(W->sessions);
    Py_XDECREF(W->unloaded);
    Py_XDECREF(W->deferred);
    Py_XDECREF(W->originals);
    Py_XDECREF(W->emit_packed);
    Py_XDECREF(W->emit_reads);
    Py_XDECREF(W->corrupt);
    Py_TYPE(self)->tp_free(self);
}

static int wk_corrupt(Walker *W, PyObject *msg) {
    if (msg) {
        PyErr_SetObject(W->corrupt, msg);
        Py_DECREF(msg);
    }
    return -1;
}

/* the chunk so far to emit_packed */
static int wk_hand_over(Walker *W) {
    uint32_t u = (uint32_t)W->out_n;
    memcpy(W->out.buf + 1, &u, 4);
    PyObject *raw = PyBytes_FromStringAndSize(W->out.buf, (Py_ssize_t)W->out.len);
    if (!raw) return -1;
    PyObject *n = PyLong_FromSsize_t(W->out_n), *mt = PyLong_FromLongLong((long long)W->out_mtime);
    W->out.len = 0;
    W->out_n = 0;
    PyObject *r = (n && mt) ? PyObject_CallFunctionObjArgs(W->emit_packed, PyList_GET_ITEM(W->stores, W->out_store),
                                                           raw, n, mt, NULL)
                            : NULL;
    Py_DECREF(raw);
    Py_XDECREF(n);
    Py_XDECREF(mt);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

static void wk_client_stat(const WFrame *f, int64_t v[11]) {
    const uint8_t *s = f->stat;
    int64_t n = (int64_t)f->seen;
    v[0] = be64(s);
    v[1] = be64(s + 8);
    v[2] = be64(s + 16);
    v[3] = be64(s + 24);
    v[4] = (int64_t)be32(s + 32);
    v[5] = (int64_t)be32(s + 36) * 2 - n;
    v[6] = (int64_t)be32(s + 40);
    v[7] = client_owner_of(be64(s + 44));
    v[8] = (int64_t)f->dn;
    v[9] = n;
    v[10] = be64(s + 52);
}

/* whether p[0:n] is ASCII (8 bytes at a time: nearly every path is) */
static inline int wk_ascii(const char *p, Py_ssize_t n) {
    uint64_t acc = 0, v;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&v, p + i, 8);
        acc |= v;
    }
    for (; i < n; i++) acc |= (uint8_t)p[i];
    return (acc & 0x8080808080808080ull) == 0;
}

/* close(frame) of stream._load_partial (the frame already popped) */
static int wk_close(Walker *W, WFrame *f) {
    if (f->node) {
        PyObject *kids = PyList_GET_ITEM(f->node, 2);
        Py_ssize_t k = 0;
        if (kids != Py_None) {
            k = PyObject_Length(kids);
            if (k < 0) return -1;
        }
        PyObject *key = PyLong_FromVoidPtr(f->node); /* id(node) */
        PyObject *val = key ? PyLong_FromSsize_t(f->seen - k) : NULL;
        int rc = val ? PyDict_SetItem(W->unloaded, key, val) : -1;
        Py_XDECREF(key);
        Py_XDECREF(val);
        Py_CLEAR(f->node);
        return rc;
    }
    if (f->store < 0) return 0;
    PyObject *store = PyList_GET_ITEM(W->stores, f->store);
    if (f->doomed) {
        PyObject *path = wk_str(f->buf, f->pn);
        PyObject *data = path ? PyBytes_FromStringAndSize(f->buf + f->pn, f->dn) : NULL;
        PyObject *stat = data ? PyBytes_FromStringAndSize((const char *)f->stat, 60) : NULL;
        PyObject *tup = stat ? Py_BuildValue("(OOOOn)", store, path, data, stat, f->seen) : NULL;
        Py_XDECREF(path);
        Py_XDECREF(data);
        Py_XDECREF(stat);
        int rc = tup ? PyList_Append(W->deferred, tup) : -1;
        Py_XDECREF(tup);
        return rc;
    }
    if (f->store != W->out_store) {
        if (W->out_n > 0 && wk_hand_over(W) < 0) return -1;
        W->out_store = f->store;
    }
    int64_t v[11];
    wk_client_stat(f, v);
    if (!wk_ascii(f->buf, f->pn) && !utf8_valid((const uint8_t *)f->buf, f->pn)) { /* pack_reads' None: marshal */
        if (W->out_n > 0 && wk_hand_over(W) < 0) return -1;
        PyObject *path = wk_str(f->buf, f->pn);
        PyObject *data = path ? PyBytes_FromStringAndSize(f->buf + f->pn, f->dn) : NULL;
        PyObject *cs = data ? PyTuple_New(11) : NULL;
        if (cs) {
            for (int k = 0; k < 11; k++) {
                PyObject *o = PyLong_FromLongLong((long long)v[k]);
                if (!o) {
                    Py_CLEAR(cs);
                    break;
                }
                PyTuple_SET_ITEM(cs, k, o);
            }
        }
        PyObject *read = cs ? PyTuple_Pack(3, path, data, cs) : NULL;
        PyObject *reads = read ? PyList_New(1) : NULL;
        Py_XDECREF(path);
        Py_XDECREF(data);
        Py_XDECREF(cs);
        if (!reads) {
            Py_XDECREF(read);
            return -1;
        }
        PyList_SET_ITEM(reads, 0, read);
        PyObject *r = PyObject_CallFunctionObjArgs(W->emit_reads, store, reads, NULL);
        Py_DECREF(reads);
        if (!r) return -1;
        Py_DECREF(r);
        return 0;
    }
    /* the path minus its first `cut` characters (UTF-8: a character starts at every byte but 10xxxxxx) */
    Py_ssize_t off = 0;
    if (W->cut > 0) {
        Py_ssize_t chars = 0;
        while (off < f->pn) {
            if (((uint8_t)f->buf[off] & 0xC0) != 0x80) {
                if (chars == W->cut) break;
                chars++;
            }
            off++;
        }
    }
    Py_ssize_t pn = f->pn - off;
    if (W->out_n == 0) { /* a new chunk: u8 PACKED, u32 count (set at the hand-over), u32 len, store */
        PyObject *sb = PyList_GET_ITEM(W->store_bytes, W->out_store);
        uint32_t sn = (uint32_t)PyBytes_GET_SIZE(sb);
        if (buf_reserve(&W->out, 9 + sn) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        W->out.buf[0] = (char)PACK_MAGIC;
        memset(W->out.buf + 1, 0, 4);
        memcpy(W->out.buf + 5, &sn, 4);
        memcpy(W->out.buf + 9, PyBytes_AS_STRING(sb), sn);
        W->out.len = 9 + sn;
        W->out_mtime = INT64_MIN;
    }
    if ((uint64_t)pn > UINT32_MAX || (uint64_t)f->dn > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "snap_walker: a path or data past 4 GB");
        return -1;
    }
    if (buf_reserve(&W->out, 8 + (size_t)pn + (size_t)f->dn + 88) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    char *w = W->out.buf + W->out.len;
    uint32_t u = (uint32_t)pn;
    memcpy(w, &u, 4);
    memcpy(w + 4, f->buf + off, (size_t)pn);
    w += 4 + pn;
    u = (uint32_t)f->dn;
    memcpy(w, &u, 4);
    memcpy(w + 4, f->buf + f->pn, (size_t)f->dn);
    w += 4 + f->dn;
    memcpy(w, v, 88);
    W->out.len += 8 + (size_t)pn + (size_t)f->dn + 88;
    if (v[3] > W->out_mtime) W->out_mtime = v[3];
    W->out_n++;
    if (W->out_n >= W->batch) return wk_hand_over(W);
    return 0;
}

/* a frame pushed with its copy of path, data and stat (the other fields set by the caller) */
static WFrame *wk_push(Walker *W, const char *path, Py_ssize_t pn, const char *data, Py_ssize_t dn,
                       const uint8_t *stat) {
    if (W->depth == W->cap) {
        Py_ssize_t cap = W->cap ? W->cap * 2 : 32;
        WFrame *st = (WFrame *)realloc(W->st, sizeof(WFrame) * (size_t)cap);
        if (!st) {
            PyErr_NoMemory();
            return NULL;
        }
        memset(st + W->cap, 0, sizeof(WFrame) * (size_t)(cap - W->cap));
        W->st = st;
        W->cap = cap;
    }
    WFrame *f = &W->st[W->depth];
    size_t need = (size_t)pn + (size_t)dn + 1;
    if (f->cap < need) {
        size_t cap = f->cap ? f->cap : 256;
        while (cap < need) cap *= 2;
        char *b = (char *)realloc(f->buf, cap);
        if (!b) {
            PyErr_NoMemory();
            return NULL;
        }
        f->buf = b;
        f->cap = cap;
    }
    memcpy(f->buf, path, (size_t)pn);
    if (dn) memcpy(f->buf + pn, data, (size_t)dn);
    memcpy(f->stat, stat, 60);
    f->pn = pn;
    f->dn = dn;
    f->seen = 0;
    f->node = NULL;
    f->store = -1;
    f->doomed = f->kc = 0;
    W->depth++;
    return f;
}

/* a kept node: [data, stat, None] for the frame (in originals), put in its parent node's children */
static int wk_keep(Walker *W, Py_ssize_t j) {
    WFrame *f = &W->st[j];
    PyObject *path = wk_str(f->buf, f->pn);
    PyObject *data = path ? PyBytes_FromStringAndSize(f->buf + f->pn, f->dn) : NULL;
    PyObject *stat = data ? PyBytes_FromStringAndSize((const char *)f->stat, 60) : NULL;
    PyObject *node = stat ? PyList_New(3) : NULL;
    if (!node) {
        Py_XDECREF(path);
        Py_XDECREF(data);
        Py_XDECREF(stat);
        return -1;
    }
    PyList_SET_ITEM(node, 0, data);
    PyList_SET_ITEM(node, 1, stat);
    Py_INCREF(Py_None);
    PyList_SET_ITEM(node, 2, Py_None);
    f->node = node;
    int rc = PyDict_SetItem(W->originals, path, node);
    if (rc == 0 && j > 0) {
        PyObject *pnode = W->st[j - 1].node;
        PyObject *kids = PyList_GET_ITEM(pnode, 2);
        if (kids == Py_None) {
            kids = PyDict_New();
            if (!kids || PyList_SetItem(pnode, 2, kids) < 0) rc = -1;
        }
        if (rc == 0) {
            Py_ssize_t cut = PyUnicode_FindChar(path, '/', 0, PyUnicode_GET_LENGTH(path), -1);
            PyObject *name = cut < -1 ? NULL : PyUnicode_Substring(path, cut + 1, PyUnicode_GET_LENGTH(path));
            rc = name ? PyDict_SetItem(kids, name, node) : -1;
            Py_XDECREF(name);
        }
    }
    Py_DECREF(path);
    return rc;
}

/* step(path, data, stat) of stream._load_partial for one record */
static int wk_node(Walker *W, const char *path, Py_ssize_t pn, const char *data, Py_ssize_t dn, const uint8_t *stat) {
    uint64_t h = wk_hash(path, pn);
    WKey *key = wk_find(W, path, pn, h);
    int flags = key && key->p ? key->flags : 0;
    if (W->depth == 0) {
        if (pn != 0) {
            PyObject *s = wk_str(path, pn);
            return wk_corrupt(W, s ? PyUnicode_FromFormat("the first node is %R, not the root", s) : NULL);
        }
        WFrame *f = wk_push(W, path, pn, data, dn, stat);
        if (!f) return -1;
        f->store = flags & WK_ROOT ? key->store : -1;
        f->kc = (flags & WK_KC) != 0;
        if (wk_keep(W, 0) < 0) return -1;
        return PyObject_SetAttrString(W->tree, "root", f->node);
    }
    Py_ssize_t cut = pn - 1;
    while (cut >= 0 && path[cut] != '/') cut--;
    for (;;) { /* not the parent: its subtree is read */
        WFrame *top = &W->st[W->depth - 1];
        if (cut >= 0 && top->pn == cut && memcmp(top->buf, path, (size_t)cut) == 0) break;
        W->depth--;
        if (wk_close(W, top) < 0) return -1;
        if (W->depth == 0) {
            PyObject *s = wk_str(path, pn);
            if (!s) return -1;
            Py_ssize_t len = PyUnicode_GET_LENGTH(s);
            Py_ssize_t c = PyUnicode_FindChar(s, '/', 0, len, -1);
            PyObject *parent = c < -1 ? NULL : PyUnicode_Substring(s, 0, c >= 0 ? c : (len > 0 ? len - 1 : 0));
            PyObject *msg = parent ? PyUnicode_FromFormat("Invalid Datatree, unable to find parent %U of path %U",
                                                          parent, s)
                                   : NULL;
            Py_XDECREF(parent);
            Py_DECREF(s);
            return wk_corrupt(W, msg);
        }
    }
    WFrame *parent = &W->st[W->depth - 1];
    parent->seen++;
    int store = parent->store >= 0 ? parent->store : (flags & WK_ROOT ? key->store : -1);
    int doomed = parent->doomed || (flags & WK_DEAD);
    int kept = parent->kc || (flags & WK_KEEP);
    WFrame *f = wk_push(W, path, pn, data, dn, stat); /* parent may move */
    if (!f) return -1;
    f->store = store;
    f->doomed = doomed;
    f->kc = (flags & WK_KC) != 0;
    int64_t owner = be64(stat + 44);
    if (owner != 0 && W->any_sessions) {
        PyObject *o = PyLong_FromLongLong((long long)owner);
        int in = o ? PySet_Contains(W->sessions, o) : -1;
        if (in > 0) { /* ephemerals.setdefault(owner, set()).add(path) */
            PyObject *fresh = PySet_New(NULL);
            PyObject *s = fresh ? PyDict_SetDefault(W->ephemerals, o, fresh) : NULL;
            PyObject *p = s ? wk_str(path, pn) : NULL;
            in = p && PySet_Add(s, p) == 0 ? 1 : -1;
            Py_XDECREF(p);
            Py_XDECREF(fresh);
            kept = 1;
            f->doomed = 1; /* the replay deletes it when it closes the session */
        }
        Py_XDECREF(o);
        if (in < 0) return -1;
    }
    if (kept) { /* the chain of ancestors not kept yet, then this node */
        Py_ssize_t i = W->depth - 1;
        while (W->st[i - 1].node == NULL) i--;
        for (Py_ssize_t j = i; j < W->depth; j++) {
            if (wk_keep(W, j) < 0) return -1;
        }
    }
    return 0;
}

static PyObject *walker_feed_buf(Walker *W, const uint8_t *buf, Py_ssize_t end, Py_ssize_t pos, int with_digest,
                                 int64_t adler);

static PyObject *walker_feed(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Walker *W = (Walker *)self;
    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "feed(buf: bytes-like, pos: int, digest: bool, adler: int | None = None)");
        return NULL;
    }
    int64_t adler = -1; /* none: the caller sums the bytes itself */
    if (nargs == 4 && args[3] != Py_None) {
        unsigned long v = PyLong_AsUnsignedLongMask(args[3]);
        if (v == (unsigned long)-1 && PyErr_Occurred()) return NULL;
        adler = (int64_t)(uint32_t)v;
    }
    int with_digest = PyObject_IsTrue(args[2]);
    if (with_digest < 0) return NULL;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred()) return NULL;
    Py_buffer view; /* bytes, or a mapped window of the snapshot file (stream.SnapshotFile.walk) */
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *r = walker_feed_buf(W, (const uint8_t *)view.buf, view.len, pos, with_digest, adler);
    PyBuffer_Release(&view);
    return r;
}

/* adler >= 0: also the running Adler-32 of the bytes walked (the seal's), summed a run at a time while they are in
 * the cache (over a mapped window, a second pass after the walk read every byte from memory again) */
static PyObject *walker_feed_buf(Walker *W, const uint8_t *buf, Py_ssize_t end, Py_ssize_t pos, int with_digest,
                                 int64_t adler) {
    uint64_t digest = 0;
    Py_ssize_t count = 0, summed = pos;
    int done = 0, bad = pos < 0 || pos > end;
    while (!bad) {
        if (adler >= 0 && pos - summed >= (1 << 16)) {
            adler = adler32_impl((uint32_t)adler, buf + summed, (size_t)(pos - summed));
            summed = pos;
        }
        int32_t n;
        Py_ssize_t d, size;
        int rec = snap_record(buf, pos, end, &n, &d, &size);
        if (rec == REC_SHORT) break;
        if (rec == REC_BAD) {
            bad = 1;
            break;
        }
        if (rec == REC_END) {
            pos += 5;
            done = 1;
            break;
        }
        const uint8_t *p = buf + pos + 4;
        const uint8_t *st = p + n + 4 + d + 8;
        if (with_digest) digest += node_digest(p, n, d);
        if (wk_node(W, (const char *)p, n, (const char *)p + n + 4, d, st) < 0) return NULL;
        count++;
        pos += size;
    }
    if (adler >= 0 && !bad && pos > summed) adler = adler32_impl((uint32_t)adler, buf + summed, (size_t)(pos - summed));
    PyObject *ad = adler >= 0 && !bad ? PyLong_FromLongLong((long long)adler) : Py_NewRef(Py_None);
    if (!ad) return NULL;
    return Py_BuildValue("(nnOKON)", count, pos, done ? Py_True : Py_False, (unsigned long long)digest,
                         bad ? Py_True : Py_False, ad);
}

static PyObject *walker_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Walker *W = (Walker *)self;
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyBytes_Check(args[1]) || !PyBytes_Check(args[2]) ||
        PyBytes_GET_SIZE(args[2]) != 60) {
        PyErr_SetString(PyExc_TypeError, "step(path: str, data: bytes, stat: 60 bytes)");
        return NULL;
    }
    PyObject *b = PyUnicode_AsEncodedString(args[0], "utf-8", "surrogateescape");
    if (!b) return NULL;
    int rc = wk_node(W, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), PyBytes_AS_STRING(args[1]),
                     PyBytes_GET_SIZE(args[1]), (const uint8_t *)PyBytes_AS_STRING(args[2]));
    Py_DECREF(b);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *walker_finish(PyObject *self, PyObject *unused) {
    (void)unused;
    Walker *W = (Walker *)self;
    while (W->depth > 0) {
        W->depth--;
        if (wk_close(W, &W->st[W->depth]) < 0) return NULL;
    }
    if (W->out_n > 0 && wk_hand_over(W) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef WALKER_METHODS[] = {
    {"feed", (PyCFunction)(void (*)(void))walker_feed, METH_FASTCALL,
     "feed(buf, pos, digest) -> (walked, pos, done, digest sum, bad): parse and walk the whole records of buf[pos:]."},
    {"step", (PyCFunction)(void (*)(void))walker_step, METH_FASTCALL, "step(path, data, stat): walk one record."},
    {"finish", walker_finish, METH_NOARGS, "finish(): close the frames left, hand over the last chunk."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WALKER_TYPE = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pulsar_ops._native.SnapWalker",
    .tp_basicsize = sizeof(Walker),
    .tp_dealloc = walker_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = WALKER_METHODS,
    .tp_doc = "zkdata.stream's pass 1, natively (snap_walker)",
};

static PyObject *snap_walker(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 14 || !PyAnySet_Check(args[1]) || !PyAnySet_Check(args[2]) || !PyAnySet_Check(args[3]) ||
        !PyAnySet_Check(args[4]) || !PyDict_Check(args[5]) || !PyDict_Check(args[6]) || !PyList_Check(args[7]) ||
        !PyDict_Check(args[8])) {
        PyErr_SetString(PyExc_TypeError,
                        "snap_walker(tree, keep: set, keep_children: set, sessions: set, dead: set, roots: dict, "
                        "unloaded: dict, deferred: list, originals: dict, batch, cut, emit_packed, emit_reads, corrupt)");
        return NULL;
    }
    Py_ssize_t batch = PyLong_AsSsize_t(args[9]), cut = PyLong_AsSsize_t(args[10]);
    if ((batch == -1 || cut == -1) && PyErr_Occurred()) return NULL;
    PyObject *ephemerals = PyObject_GetAttrString(args[0], "ephemerals");
    if (!ephemerals) return NULL;
    if (!PyDict_Check(ephemerals)) {
        Py_DECREF(ephemerals);
        PyErr_SetString(PyExc_TypeError, "snap_walker: tree.ephemerals is not a dict");
        return NULL;
    }
    Walker *W = PyObject_New(Walker, &WALKER_TYPE);
    if (!W) {
        Py_DECREF(ephemerals);
        return NULL;
    }
    char *base = (char *)W + offsetof(Walker, keys);
    memset(base, 0, sizeof(Walker) - offsetof(Walker, keys));
    W->ephemerals = ephemerals;
    PyObject **refs[] = {&W->tree, &W->sessions, &W->unloaded, &W->deferred, &W->originals, &W->emit_packed,
                         &W->emit_reads, &W->corrupt};
    PyObject *vals[] = {args[0], args[3], args[6], args[7], args[8], args[11], args[12], args[13]};
    for (int i = 0; i < 8; i++) {
        Py_INCREF(vals[i]);
        *refs[i] = vals[i];
    }
    W->any_sessions = PySet_GET_SIZE(args[3]) > 0;
    W->batch = batch > 0 ? batch : 1;
    W->cut = cut > 0 ? cut : 0;
    W->out_store = -1;
    W->stores = PyList_New(0);
    W->store_bytes = PyList_New(0);
    if (!W->stores || !W->store_bytes) goto fail;
    size_t members = (size_t)(PySet_GET_SIZE(args[1]) + PySet_GET_SIZE(args[2]) + PySet_GET_SIZE(args[4]) +
                              PyDict_GET_SIZE(args[5]));
    size_t size = 16;
    while (size < 2 * members + 2) size *= 2;
    W->keys = (WKey *)calloc(size, sizeof(WKey));
    if (!W->keys) {
        PyErr_NoMemory();
        goto fail;
    }
    W->kmask = size - 1;
    if (wk_add_set(W, args[1], WK_KEEP) < 0 || wk_add_set(W, args[2], WK_KC) < 0 || wk_add_set(W, args[4], WK_DEAD) < 0)
        goto fail;
    PyObject *k, *v;
    Py_ssize_t it = 0;
    while (PyDict_Next(args[5], &it, &k, &v)) {
        if (!PyUnicode_Check(v)) {
            PyErr_SetString(PyExc_TypeError, "snap_walker: a store that is not a str");
            goto fail;
        }
        Py_ssize_t idx = -1, ns = PyList_GET_SIZE(W->stores);
        for (Py_ssize_t s = 0; s < ns; s++) {
            int eq = PyObject_RichCompareBool(PyList_GET_ITEM(W->stores, s), v, Py_EQ);
            if (eq < 0) goto fail;
            if (eq) {
                idx = s;
                break;
            }
        }
        if (idx < 0) {
            PyObject *sb = PyUnicode_AsUTF8String(v);
            if (!sb) goto fail;
            int rc = PyList_Append(W->stores, v) < 0 || PyList_Append(W->store_bytes, sb) < 0 ? -1 : 0;
            Py_DECREF(sb);
            if (rc < 0) goto fail;
            idx = ns;
        }
        if (wk_add(W, k, WK_ROOT, (int)idx) < 0) goto fail;
    }
    return (PyObject *)W;
fail:
    Py_DECREF(W);
    return NULL;
}

/* ---- pack_reads / unpack_reads: a chunk of reads over the decode workers' pipes ------------------------------
 *
 * pack_reads(store, reads) -> bytes | None; unpack_reads(raw) -> (store, reads)
 *
 * The walk hands reads (path: str, data: bytes, stat: 11 ints) to the decode worker processes a chunk at a time
 * (scrape.decode_pool). marshal spends most of its time on the stat's ints (a zxid or a time in ms is a
 * multi-digit long to marshal) and on its reference table; this layout is a few memcpys each way:
 *
 *   u8 PACK_MAGIC, u32 count, u32 store length, store (UTF-8), then per read:
 *   u32 path length, path (UTF-8), u32 data length, data, 11 x i64 stat
 *
 * in the machine's own byte order (both ends are the same interpreter on the same machine: the worker is
 * sys.executable). pack_reads returns None for anything else (a read that is not such a tuple, a path that does
 * not encode to UTF-8, an int past int64, a length past u32): the caller sends marshal instead. The pure twins are
 * scrape.decode_pool.pack_reads_py / unpack_reads_py (the same bytes; tests/unit/scrape/test_decode_pool.py). */


static PyObject *pack_reads(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "pack_reads(store: str, reads: list)");
        return NULL;
    }
    PyObject *reads = args[1];
    Py_ssize_t count = PyList_GET_SIZE(reads), sn;
    const char *sp = PyUnicode_AsUTF8AndSize(args[0], &sn);
    if (!sp) return NULL;
    if (count > (Py_ssize_t)UINT32_MAX || sn > (Py_ssize_t)UINT32_MAX) Py_RETURN_NONE;
    /* first pass: check every read and size the buffer */
    size_t total = 1 + 4 + 4 + (size_t)sn;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *r = PyList_GET_ITEM(reads, i);
        if (!PyTuple_CheckExact(r) || PyTuple_GET_SIZE(r) != 3) Py_RETURN_NONE;
        PyObject *path = PyTuple_GET_ITEM(r, 0), *data = PyTuple_GET_ITEM(r, 1), *stat = PyTuple_GET_ITEM(r, 2);
        if (!PyUnicode_CheckExact(path) || !PyBytes_CheckExact(data) || !PyTuple_CheckExact(stat) ||
            PyTuple_GET_SIZE(stat) != 11)
            Py_RETURN_NONE;
        Py_ssize_t pn;
        if (PyUnicode_IS_ASCII(path)) {
            pn = PyUnicode_GET_LENGTH(path);
        } else if (!PyUnicode_AsUTF8AndSize(path, &pn)) { /* a lone surrogate (surrogateescape): marshal's */
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        Py_ssize_t dn = PyBytes_GET_SIZE(data);
        if (pn > (Py_ssize_t)UINT32_MAX || dn > (Py_ssize_t)UINT32_MAX) Py_RETURN_NONE;
        for (int k = 0; k < 11; k++) {
            if (!PyLong_CheckExact(PyTuple_GET_ITEM(stat, k))) Py_RETURN_NONE;
        }
        total += 4 + (size_t)pn + 4 + (size_t)dn + 11 * 8;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!out) return NULL;
    char *w = PyBytes_AS_STRING(out);
    uint32_t u;
    *w++ = (char)PACK_MAGIC;
    u = (uint32_t)count;
    memcpy(w, &u, 4);
    w += 4;
    u = (uint32_t)sn;
    memcpy(w, &u, 4);
    w += 4;
    memcpy(w, sp, (size_t)sn);
    w += sn;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *r = PyList_GET_ITEM(reads, i);
        PyObject *path = PyTuple_GET_ITEM(r, 0), *data = PyTuple_GET_ITEM(r, 1), *stat = PyTuple_GET_ITEM(r, 2);
        Py_ssize_t pn;
        const char *pp = PyUnicode_IS_ASCII(path) ? (const char *)PyUnicode_DATA(path) : NULL;
        if (pp) {
            pn = PyUnicode_GET_LENGTH(path);
        } else {
            pp = PyUnicode_AsUTF8AndSize(path, &pn); /* cached by the first pass */
            if (!pp) {
                Py_DECREF(out);
                return NULL;
            }
        }
        u = (uint32_t)pn;
        memcpy(w, &u, 4);
        memcpy(w + 4, pp, (size_t)pn);
        w += 4 + pn;
        Py_ssize_t dn = PyBytes_GET_SIZE(data);
        u = (uint32_t)dn;
        memcpy(w, &u, 4);
        memcpy(w + 4, PyBytes_AS_STRING(data), (size_t)dn);
        w += 4 + dn;
        for (int k = 0; k < 11; k++) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(stat, k), &overflow);
            if (overflow) {
                Py_DECREF(out);
                Py_RETURN_NONE;
            }
            int64_t v = (int64_t)x;
            memcpy(w, &v, 8);
            w += 8;
        }
    }
    return out;
}

/* One read of a packed chunk (its bounds checked by reads_open) as the (path, data, stat) tuple. */
static PyObject *packed_read(const char *p) {
    uint32_t pn, dn;
    memcpy(&pn, p, 4);
    PyObject *path = PyUnicode_DecodeUTF8(p + 4, (Py_ssize_t)pn, NULL);
    if (!path) return NULL;
    p += 4 + pn;
    memcpy(&dn, p, 4);
    PyObject *data = PyBytes_FromStringAndSize(p + 4, (Py_ssize_t)dn);
    p += 4 + dn;
    PyObject *stat = data ? PyTuple_New(11) : NULL;
    PyObject *t = stat ? PyTuple_New(3) : NULL;
    if (!t) {
        Py_DECREF(path);
        Py_XDECREF(data);
        Py_XDECREF(stat);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 0, path);
    PyTuple_SET_ITEM(t, 1, data);
    PyTuple_SET_ITEM(t, 2, stat);
    for (int k = 0; k < 11; k++) {
        int64_t v;
        memcpy(&v, p + 8 * k, 8);
        PyObject *o = PyLong_FromLongLong((long long)v);
        if (!o) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(stat, k, o);
    }
    return t;
}

/* unpack_reads(raw, idx=None) -> (store, reads): every read of a packed chunk, or those at idx (in that order) */
static PyObject *unpack_reads(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 1 || nargs > 2 || !PyBytes_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "unpack_reads(raw: bytes, idx: list | None = None)");
        return NULL;
    }
    Reads R;
    if (reads_open(args[0], nargs == 2 ? args[1] : Py_None, &R) < 0) return NULL;
    const char *b = (const char *)R.view.buf;
    uint32_t sn;
    memcpy(&sn, b + 5, 4);
    PyObject *store = PyUnicode_DecodeUTF8(b + 9, (Py_ssize_t)sn, NULL);
    Py_ssize_t n = reads_len(&R);
    PyObject *reads = store ? PyList_New(n) : NULL, *result = NULL;
    if (!reads) goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t ix = k;
        if (R.idx) {
            ix = PyLong_AsSsize_t(PyList_GET_ITEM(R.idx, k));
            if (ix == -1 && PyErr_Occurred()) goto done;
            if (ix < 0 || ix >= R.count) {
                PyErr_SetString(PyExc_IndexError, "a read index past the chunk");
                goto done;
            }
        }
        PyObject *t = packed_read(b + R.off[ix]);
        if (!t) goto done;
        PyList_SET_ITEM(reads, k, t);
    }
    result = PyTuple_Pack(2, store, reads);
done:
    Py_XDECREF(store);
    Py_XDECREF(reads);
    reads_close(&R);
    return result;
}

static PyMethodDef METHODS[] = {
    {"crc32", (PyCFunction)(void (*)(void))py_crc32, METH_FASTCALL,
     "crc32(data, value=0) -> int: zlib.crc32, by carry-less multiplication where the CPU has PCLMULQDQ."},
    {"adler32", (PyCFunction)(void (*)(void))py_adler32, METH_FASTCALL,
     "adler32(data, value=1) -> int: zlib.adler32, vectorised where the CPU has AVX2."},
    {"pack_reads", (PyCFunction)(void (*)(void))pack_reads, METH_FASTCALL,
     "pack_reads(store, reads) -> bytes | None: a chunk of reads for a decode worker's pipe (None: send marshal)."},
    {"unpack_reads", (PyCFunction)(void (*)(void))unpack_reads, METH_FASTCALL,
     "unpack_reads(raw, idx=None) -> (store, reads): pack_reads' chunk read back, or its reads at idx "
     "(ValueError when malformed)."},
    {"bk_ledger", bk_ledger, METH_O,
     "bk_ledger(data: bytes) -> tuple | None: the bk_ledgers row parts of a v3 (binary) or v2 (text) ledger "
     "metadata znode, or None when the pure-Python path must decide."},
    {"ml_info", ml_info, METH_O,
     "ml_info(plain: bytes) -> tuple | None: (ledger rows, terminated, properties) of a plain binary "
     "ManagedLedgerInfo, or None when the pure-Python path must decide."},
    {"cursor_info", cursor_info, METH_O,
     "cursor_info(plain: bytes) -> tuple | None: (cursorsLedgerId, mark_delete, lastActive, ranges, batched count, "
     "properties, cursorProperties) of a plain ManagedCursorInfo, or None when the pure-Python path must decide."},
    {"znode_row", (PyCFunction)(void (*)(void))znode_row, METH_FASTCALL,
     "znode_row(store, path, stat, kind, decode_error, sha) -> the znodes row tuple (scrape.extract.znode_row_with_sha)."},
    {"snap_nodes", (PyCFunction)(void (*)(void))snap_nodes, METH_FASTCALL,
     "snap_nodes(buf, pos, limit, digest) -> (nodes, pos, done, digest sum) | None: whole node records of a "
     "ZooKeeper snapshot stream."},
    {"snap_walker", (PyCFunction)(void (*)(void))snap_walker, METH_FASTCALL,
     "snap_walker(tree, keep, keep_children, sessions, dead, roots, unloaded, deferred, originals, batch, cut, "
     "emit_packed, emit_reads, corrupt) -> a walker (feed, step, finish): zkdata.stream's pass 1 natively."},
    {"sha256_hex", py_sha256_hex, METH_O,
     "sha256_hex(data: bytes) -> str: hashlib.sha256(data).hexdigest(), natively (the batches' data_sha256)."},
    {"bk_batch", (PyCFunction)(void (*)(void))bk_batch, METH_FASTCALL,
     "bk_batch(store, reads, ledgers_root, max_bytes, znodes_spec, bk_spec) -> (n, rest, znodes columns, "
     "bk_ledgers columns, min mzxid, max mzxid): the hierarchical v3 ledger znodes of a chunk as Arrow buffers."},
    {"schema_batch", (PyCFunction)(void (*)(void))schema_batch, METH_FASTCALL,
     "schema_batch(store, reads, ledgers_root, max_bytes, znodes_spec, schema_spec) -> (n, rest, znodes columns, "
     "schema_index columns, schema_index rows, min mzxid, max mzxid, scope counts): the schema locators of a chunk."},
    {"misc_batch", (PyCFunction)(void (*)(void))misc_batch, METH_FASTCALL,
     "misc_batch(store, reads, ledgers_root, max_bytes, specs) -> (n, rest, tables, row counts, min mzxid, "
     "max mzxid, scope counts): the directories, partitioned-topic metadata and bundles of a chunk."},
    {"ml_batch", (PyCFunction)(void (*)(void))ml_batch, METH_FASTCALL,
     "ml_batch(store, reads, max_bytes, specs, helpers) -> (n, rest, tables, row counts, min mzxid, max mzxid, "
     "scope counts): the managed-ledger and cursor znodes of a chunk as Arrow buffers."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_native", "pulsar-ops native hot paths", -1, METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) {
    static const char *states[4] = {NULL, "OPEN", "IN_RECOVERY", "CLOSED"};
    static const char *digests[5] = {NULL, "CRC32", "HMAC", "CRC32C", "DUMMY"};
    for (int i = 1; i < 4; i++) {
        if (!(STATE_NAMES[i] = PyUnicode_InternFromString(states[i]))) return NULL;
    }
    for (int i = 1; i < 5; i++) {
        if (!(DIGEST_NAMES[i] = PyUnicode_InternFromString(digests[i]))) return NULL;
    }
    crc_init();
    json_plain_init();
    const char *sha_impl = getenv("PULSAR_OPS_NATIVE_SHA");
    if (sha_ni_available() && !(sha_impl && strcmp(sha_impl, "c") == 0)) sha256_blocks = sha256_blocks_ni;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    const char *adler_impl = getenv("PULSAR_OPS_NATIVE_ADLER");
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && !(adler_impl && strcmp(adler_impl, "c") == 0)) adler32_impl = adler32_avx2;
    const char *crc_impl = getenv("PULSAR_OPS_NATIVE_CRC");
    CRC_FOLD = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") && !(crc_impl && strcmp(crc_impl, "c") == 0);
#endif
    if (!(FORMAT_BINARY = PyUnicode_InternFromString("binary")) || !(FORMAT_TEXT = PyUnicode_InternFromString("text")) || !(FORMAT_EMPTY = PyUnicode_InternFromString("empty")) ||
        !(CODEC_NONE = PyUnicode_InternFromString("NONE")))
        return NULL;
    if (!(SLASH = PyUnicode_InternFromString("/")) || !(EMPTY = PyUnicode_InternFromString(""))) return NULL;
    if (PyType_Ready(&MEM_TYPE) < 0 || PyType_Ready(&WALKER_TYPE) < 0) return NULL;
    PyObject *m = PyModule_Create(&MODULE);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "ABI", NATIVE_ABI) < 0 ||
        PyModule_AddStringConstant(m, "SHA256", sha256_blocks == sha256_blocks_c ? "c" : "x86-sha") < 0 ||
        PyModule_AddStringConstant(m, "ADLER32", adler32_impl == adler32_c ? "c" : "avx2") < 0 ||
        PyModule_AddStringConstant(m, "CRC32", CRC_FOLD ? "pclmul" : "c") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
