/* Arrays of records under a result or a report section (report.h). A
 * gt_record is the json_t object itself. */
#include <math.h>

#include "reports/report_impl.h"

static json_t *member(json_t *parent, const char *key, int array) {
    json_t *m = json_object_get(parent, key);
    if (!m || (array ? !json_is_array(m) : !json_is_object(m))) {
        m = array ? json_array() : json_object();
        if (!m || json_object_set_new(parent, key, m) != 0) return NULL;
    }
    return m;
}

static gt_record *append(json_t *arr) {
    json_t *o = arr ? json_object() : NULL;
    if (!o) return NULL;
    if (json_array_append_new(arr, o) != 0) return NULL;
    return (gt_record *)o;
}

gt_record *gt_result_record(gt_result *res, const char *array) {
    json_t *o = gt_result_json(res);
    return o ? append(member(o, array, 1)) : NULL;
}

gt_record *gt_report_record(gt_report *r, const char *section, const char *array) {
    json_t *root = gt_report_json(r);
    json_t *sec = root ? member(root, section, 0) : NULL;
    return sec ? append(member(sec, array, 1)) : NULL;
}

gt_record *gt_record_object(gt_record *rec, const char *key) {
    return rec ? (gt_record *)member((json_t *)rec, key, 0) : NULL;
}

void gt_record_str(gt_record *rec, const char *key, const char *value) {
    if (rec)
        json_object_set_new((json_t *)rec, key,
                            value && *value ? json_string(value) : json_null());
}

void gt_record_int(gt_record *rec, const char *key, long long value) {
    if (rec) json_object_set_new((json_t *)rec, key, json_integer(value));
}

void gt_record_num(gt_record *rec, const char *key, double value) {
    if (rec) json_object_set_new((json_t *)rec, key, isfinite(value) ? json_real(value) : json_null());
}

void gt_record_bool(gt_record *rec, const char *key, int value) {
    if (rec) json_object_set_new((json_t *)rec, key, json_boolean(value));
}

void gt_report_section_str(gt_report *r, const char *section, const char *key, const char *value) {
    json_t *root = gt_report_json(r);
    if (root) gt_record_str((gt_record *)member(root, section, 0), key, value);
}

void gt_report_section_num(gt_report *r, const char *section, const char *key, double value) {
    json_t *root = gt_report_json(r);
    if (root) gt_record_num((gt_record *)member(root, section, 0), key, value);
}

void gt_report_section_array(gt_report *r, const char *section, const char *key) {
    json_t *root = gt_report_json(r);
    json_t *sec = root ? member(root, section, 0) : NULL;
    if (sec) member(sec, key, 1);
}

void gt_report_section_int(gt_report *r, const char *section, const char *key, long long value) {
    json_t *root = gt_report_json(r);
    if (root) gt_record_int((gt_record *)member(root, section, 0), key, value);
}
