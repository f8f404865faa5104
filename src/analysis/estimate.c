/* Tallies of sampled objects and the estimators on them: bytes by the
 * sample count (a Garwood interval), objects by Horvitz-Thompson (Fay and
 * Feuer's gamma interval). docs/estimators.md derives both. */
#include <math.h>
#include <string.h>

#include "analysis_internal.h"

void mt__fx_of(double x, uint64_t out[2]) {
  /* x * 2^32, cut to a whole number: exact steps in double arithmetic
   * (scaling by powers of two, the high word's multiple of 2^64 taken off
   * a value that holds it), so a term is the same wherever it is made */
  double s = x * 0x1p32;
  if (!(s >= 1)) { /* also NaN */
    out[0] = out[1] = 0;
    return;
  }
  if (s >= 0x1p128) {
    out[0] = out[1] = UINT64_MAX;
    return;
  }
  double hi = floor(s * 0x1p-64);
  out[1] = (uint64_t)hi;
  out[0] = (uint64_t)(s - hi * 0x1p64);
}

void mt_tally_add_weight(mt_tally *t, double w, double v) {
  uint64_t fw[2], fv[2];
  mt__fx_of(w, fw);
  mt__fx_of(v, fv);
  mt_tally_fx_add(t->ht_fx, fw);
  mt_tally_fx_add(t->var_fx, fv);
  if (w > t->w_max) t->w_max = w;
}

void mt__tally_big(const mt_analysis *a, uint64_t words, mt_tally *t) {
  double p = -expm1((double)words * a->log1m_rate);
  mt_tally_add_weight(t, 1.0 / p, (1.0 - p) / (p * p));
}

void mt_tally_object(const mt_analysis *a, size_t i, mt_tally *t) { mt__tally_object(a, i, t); }

mt_tally mt_analysis_total(const mt_analysis *a) { return a->all; }

mt_sampling mt_analysis_sampling(const mt_analysis *a) {
  mt_sampling s = {a->info.sample_rate, a->word_bytes};
  return s;
}

/* Quantile of the chi-square distribution (Wilson-Hilferty), for the exact
 * (Garwood) Poisson interval on a sample count. */
static double chi2_quantile(double z, double k) {
  double h = 2.0 / (9.0 * k);
  double c = 1.0 - h + z * sqrt(h);
  return c > 0 ? k * c * c * c : 0;
}

static const double z95 = 1.959963984540054;

mt_estimate mt_sampling_bytes(const mt_sampling *s, const mt_tally *t) {
  double n = (double)t->samples, scale = s->word_bytes / s->rate;
  mt_estimate e = {n * scale, 0, 0};
  /* Samples ~ Binomial(words, rate), close to Poisson for small rates; the
   * Garwood interval keeps its 95% coverage down to a handful of samples. */
  e.lo = n > 0 ? chi2_quantile(-z95, 2 * n) / 2 * scale : 0;
  e.hi = (n > 0 ? chi2_quantile(z95, 2 * n + 2) / 2 : -log(0.025)) * scale;
  if (s->rate >= 1) e.lo = e.hi = e.value; /* everything sampled */
  return e;
}

/* Fay and Feuer's gamma interval for y, a weighted sum of Poisson counts
 * with variance estimate v, the largest weight wm: Garwood's interval on
 * the effective count y^2/v scaled by v/y, the upper end as if one more
 * count of the largest weight had been seen. */
static void gamma_interval(double y, double v, double wm, double *lo, double *hi) {
  *lo = chi2_quantile(-z95, 2 * y * y / v) / 2 * (v / y);
  double yu = y + wm, vu = v + wm * wm;
  *hi = chi2_quantile(z95, 2 * yu * yu / vu) / 2 * (vu / yu);
}

mt_estimate mt_sampling_bytes_mixed(const mt_sampling *s, const mt_tally *t, size_t n) {
  /* Each trace's samples weigh its bytes per sample: the sum is a weighted
   * sum of (nearly) Poisson counts, the case of the objects' count below.
   * With every rate equal this is Garwood's interval of
   * mt_sampling_bytes, scaled. */
  double exact = 0, y = 0, v = 0, wm = 0;
  for (size_t k = 0; k < n; k++) {
    double scale = s[k].word_bytes / s[k].rate, c = (double)t[k].samples;
    if (s[k].rate >= 1) { /* everything sampled: known exactly */
      exact += c * scale;
      continue;
    }
    y += c * scale;
    v += c * scale * scale;
    if (scale > wm) wm = scale;
  }
  mt_estimate e = {exact + y, exact, exact};
  if (wm == 0) return e; /* every trace sampled everything */
  if (y > 0) gamma_interval(y, v, wm, &e.lo, &e.hi);
  else e.lo = 0, e.hi = -log(0.025) * wm; /* nothing sampled: as Garwood's for 0 */
  if (e.hi < y) e.hi = y;
  e.lo += exact;
  e.hi += exact;
  return e;
}

mt_estimate mt_sampling_objects(const mt_sampling *s, const mt_tally *t) {
  /* The Horvitz-Thompson count is a weighted sum of (nearly) Poisson
   * counts; its interval is Fay and Feuer's gamma interval for such sums
   * (docs/estimators.md): Garwood's Poisson interval on the effective
   * number of objects Y^2/V, scaled by V/Y, with the upper end computed as
   * if one more object of the largest weight had been sampled. */
  double y = mt_tally_ht(t), v = mt_tally_ht_var(t);
  mt_estimate e = {y, y, y};
  if (t->objects == 0) {
    /* Nothing sampled: up to -ln(0.025) = 3.69 expected sampled objects
     * of the smallest size (1 word, the heaviest weight) are consistent. */
    double p1 = -expm1(log1p(-s->rate)); /* one word's chance, as the tallies compute it */
    e.lo = e.hi = 0;
    if (p1 > 0 && p1 < 1) e.hi = -log(0.025) / p1;
    return e;
  }
  if (!(v > 0) || !(y > 0)) return e; /* every object certain to be sampled */
  double wm = t->w_max > 0 ? t->w_max : v / y;
  gamma_interval(y, v, wm, &e.lo, &e.hi);
  if (e.lo < (double)t->objects) e.lo = (double)t->objects; /* we saw these */
  if (e.hi < e.value) e.hi = e.value;
  return e;
}

mt_estimate mt_estimate_bytes(const mt_analysis *a, const mt_tally *t) {
  mt_sampling s = mt_analysis_sampling(a);
  return mt_sampling_bytes(&s, t);
}

mt_estimate mt_estimate_objects(const mt_analysis *a, const mt_tally *t) {
  mt_sampling s = mt_analysis_sampling(a);
  return mt_sampling_objects(&s, t);
}
