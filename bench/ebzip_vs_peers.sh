#!/usr/bin/env bash
# ebzip against zfp's command line on real fields, at the same absolute
# bounds (DESIGN §5: "on the CPU, the codec should beat zfp's own command
# line on the same real fields at the same absolute bound, in both ratio and
# time").
#
# Usage: bench/ebzip_vs_peers.sh [BUILD_DIR] [WORK_DIR]
#   BUILD_DIR  holds client/cli/ebzip and bench/ebzip_export_field (default
#              build/); this script builds nothing.
#   WORK_DIR   scratch space for raw files and archives (default: a new
#              directory under /tmp, removed at the end unless KEEP=1).
# Environment: DATA (default /usr/share/ferret-vis/data), REPS (timed runs
# per measurement, best kept; default 3), ZFP (default zfp).
#
# Markdown tables go to stdout; every command's output goes to WORK_DIR/log.
#
# What is measured, per field and per bound E = range * {1e-2 .. 1e-5}
# (range: the finite, non-fill values' max - min, from ebzip_export_field):
#   ebzip  compress   --type f32 --shape S --abs E [--fill V] raw -> .ebz
#          decompress .ebz -> raw
#   zfp    -f -<rank> <dims fastest first> -a E -h  raw -> .zfp (serial, and
#          with -x omp=2 for compression, the only zfp stage OpenMP runs)
#          -h -z .zfp -o raw
# Both whole processes, wall and CPU (user + system) time from bash's `time`,
# best of REPS rounds (the commands take turns, so background load hits both
# alike), reading and writing files in the page cache. Both reconstructions are judged by the
# same checker, `ebzip compare --abs E [--fill V]`: max error, PSNR over the
# non-fill values, violations of E, and fill values not restored bit for bit.
set -euo pipefail

BUILD=${1:-build}
KEEP=${KEEP:-0}
if [[ $# -ge 2 ]]; then
  WORK=$2
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d /tmp/ebzip_vs_zfp.XXXXXX)
fi
DATA=${DATA:-/usr/share/ferret-vis/data}
REPS=${REPS:-3}
ZFP=${ZFP:-zfp}
EBZIP=$BUILD/client/cli/ebzip
EXPORT=$BUILD/bench/ebzip_export_field
LOG=$WORK/log

for tool in "$EBZIP" "$EXPORT"; do
  [[ -x $tool ]] || { echo "missing $tool: build it first (ninja -C $BUILD)" >&2; exit 2; }
done
command -v "$ZFP" >/dev/null || { echo "missing zfp (apt-get install zfp)" >&2; exit 2; }
if [[ $# -lt 2 && $KEEP != 1 ]]; then trap 'rm -rf "$WORK"' EXIT; fi
: >"$LOG"

# name | source
FIELDS=(
  "etopo5|etopo5.cdf:ROSE"
  "TEMP|ocean_atlas_subset.nc:TEMP"
  "UWND|monthly_navy_winds.cdf:UWND"
  "SALT|levitus_climatology.cdf:SALT"
)
RELS=(1e-2 1e-3 1e-4 1e-5)

# time_once CMD...: runs CMD once, prints "WALL CPU" seconds (CPU: user +
# system, which background load disturbs far less than wall time).
time_once() {
  local TIMEFORMAT='%R %U %S' t
  t=$( { time "$@" >>"$LOG" 2>&1; } 2>&1)
  awk '{ printf "%.3f %.3f", $1, $2 + $3 }' <<<"$t"
}
# keep_best VAR CMD...: runs CMD, lowers VAR_wall and VAR_cpu to its times.
keep_best() {
  local var=$1 wall cpu
  shift
  read -r wall cpu <<<"$(time_once "$@")"
  local -n w=${var}_wall c=${var}_cpu
  w=$(awk -v a="$wall" -v b="$w" 'BEGIN { print (b == "" || a < b) ? a : b }')
  c=$(awk -v a="$cpu" -v b="$c" 'BEGIN { print (b == "" || a < b) ? a : b }')
}

size_of() { stat -c %s "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# check ORIG RECON E FILLARG...: "psnr|max error|violations|fill mismatches"
check() {
  local out
  out=$("$EBZIP" compare --type f32 "$1" "$2" --abs "$3" "${@:4}" 2>&1 || true)
  echo "== compare $2 at $3" >>"$LOG"
  echo "$out" >>"$LOG"
  local psnr maxe viol spec
  psnr=$(sed -n 's/.*psnr \([^ ]*\) dB.*/\1/p' <<<"$out")
  maxe=$(sed -n 's/.*max error \([^,]*\),.*/\1/p' <<<"$out")
  viol=$(sed -n 's/.*: \([0-9]*\) violations.*/\1/p' <<<"$out")
  spec=$(sed -n 's/.*not bit-identical: \([0-9]*\).*/\1/p' <<<"$out")
  [[ -n $viol && -n $spec ]] || { echo "compare failed: $out" >&2; exit 1; }
  echo "$psnr|$(awk -v m="$maxe" 'BEGIN { printf "%.4g", m }')|$viol|$spec"
}

# violations column: "V" or "V (+F fill)" when fill values were not restored.
viol_text() {
  if [[ $2 -gt 0 ]]; then echo "$1 (+$2 fill)"; else echo "$1"; fi
}

declare -A META
read_meta() {  # read_meta "k=v k=v ...": fills META
  META=()
  local kv
  for kv in $1; do META[${kv%%=*}]=${kv#*=}; done
}

MAIN_ROWS=()
CPU_ROWS=()
FILLED_ROWS=()
TUNED_ROWS=()

echo "ebzip_vs_peers: $(date -u +%FT%TZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "$("$ZFP" 2>&1 | head -1)" >&2

for entry in "${FIELDS[@]}"; do
  name=${entry%%|*}
  source=$DATA/${entry#*|}
  raw=$WORK/$name.raw
  filled=$WORK/$name.filled.raw
  line=$("$EXPORT" "$source" "$raw" "$filled")
  echo "== $name: $line" | tee -a "$LOG" >&2
  read_meta "$line"
  shape=${META[shape]}
  rank=$(tr ',' '\n' <<<"$shape" | wc -l)
  zfp_dims=$(tr ',' ' ' <<<"${META[zfp_dims]}")
  fill_args=()
  fill_count=${META[fill_count]}
  [[ ${META[fill]} != none ]] && fill_args=(--fill "${META[fill]}")
  raw_bytes=$(size_of "$raw")

  for rel in "${RELS[@]}"; do
    E=$(awk -v r="${META[range]}" -v e="$rel" 'BEGIN { printf "%.6g", r * e }')
    echo "-- $name E=$E (range x $rel)" >&2

    # The five timed commands run in turn, REPS rounds, so that both codecs
    # see the same background load; each keeps its best time.
    ebz=$WORK/$name.ebz
    ebz_out=$WORK/$name.ebz.out
    zf=$WORK/$name.zfp
    zf_out=$WORK/$name.zfp.out
    zargs=(-f "-$rank" $zfp_dims -a "$E")
    ec_wall="" ed_wall="" zc_wall="" zc2_wall="" zd_wall=""
    ec_cpu="" ed_cpu="" zc_cpu="" zc2_cpu="" zd_cpu=""
    for ((r = 0; r < REPS; ++r)); do
      keep_best ec "$EBZIP" compress --quiet --type f32 --shape "$shape" --abs "$E" \
        "${fill_args[@]}" "$raw" -o "$ebz"
      keep_best ed "$EBZIP" decompress --quiet "$ebz" -o "$ebz_out"
      # zfp, serial; compression also with 2 OpenMP threads (zfp 1.0 has no
      # OpenMP decompression).
      keep_best zc "$ZFP" "${zargs[@]}" -h -q -i "$raw" -z "$zf"
      keep_best zc2 "$ZFP" "${zargs[@]}" -x omp=2 -h -q -i "$raw" -z "$zf.omp"
      keep_best zd "$ZFP" -h -q -z "$zf" -o "$zf_out"
    done
    er=$(ratio "$raw_bytes" "$(size_of "$ebz")")
    IFS='|' read -r ep em ev es <<<"$(check "$raw" "$ebz_out" "$E" "${fill_args[@]}")"
    rm -f "$ebz_out"
    zr=$(ratio "$raw_bytes" "$(size_of "$zf")")
    echo "== zfp -s $name E=$E: $("$ZFP" "${zargs[@]}" -i "$raw" -s 2>&1 | tail -1)" >>"$LOG"
    IFS='|' read -r zp zm zv zs <<<"$(check "$raw" "$zf_out" "$E" "${fill_args[@]}")"
    rm -f "$zf_out" "$zf.omp"

    MAIN_ROWS+=("| $name | $E | $er | $ep | $em | $(viol_text "$ev" "$es") | $ec_wall |\
 $ed_wall | $zr | $zp | $zm | $(viol_text "$zv" "$zs") | $zc_wall | $zc2_wall | $zd_wall |")
    CPU_ROWS+=("| $name | $E | $ec_cpu | $ed_cpu | $zc_cpu | $zc2_cpu | $zd_cpu |")

    # zfp on the copy with fills replaced by the field's mean, judged against
    # the original (fills then count as "not restored": a mask would do it).
    zin=$raw
    if [[ $fill_count -gt 0 ]]; then
      zin=$filled
      "$ZFP" "${zargs[@]}" -h -q -i "$filled" -z "$zf" -o "$zf_out" >>"$LOG" 2>&1
      zfr=$(ratio "$raw_bytes" "$(size_of "$zf")")
      IFS='|' read -r fp fm fv fs <<<"$(check "$raw" "$zf_out" "$E" "${fill_args[@]}")"
      # The same copy through ebzip (no fill value): what ebzip's own fill
      # handling costs against a smooth stand-in.
      "$EBZIP" compress --quiet --type f32 --shape "$shape" --abs "$E" "$filled" -o "$ebz" \
        >>"$LOG" 2>&1
      efr=$(ratio "$raw_bytes" "$(size_of "$ebz")")
      FILLED_ROWS+=("| $name | $E | $er | $ep | $efr | $zfr | $fp | $fm | $(viol_text "$fv" "$fs") |")
      rm -f "$zf_out"
    fi

    # zfp's tolerance is conservative: the loosest E * 2^k (k <= 10) whose
    # reconstruction still meets E on every non-fill value (zfp's input is
    # the fill-replaced copy for fields with fills).
    best_k="" best_r="" best_p="" best_m=""
    for ((k = 0; k <= 10; ++k)); do
      tol=$(awk -v e="$E" -v k="$k" 'BEGIN { printf "%.9g", e * 2 ^ k }')
      "$ZFP" -f "-$rank" $zfp_dims -a "$tol" -h -q -i "$zin" -z "$zf" -o "$zf_out" >>"$LOG" 2>&1
      IFS='|' read -r tp tm tv ts <<<"$(check "$raw" "$zf_out" "$E" "${fill_args[@]}")"
      [[ $tv -eq 0 ]] || break
      best_k=$k best_r=$(ratio "$raw_bytes" "$(size_of "$zf")") best_p=$tp best_m=$tm
    done
    rm -f "$zf_out" "$zf"
    if [[ -n $best_k ]]; then
      TUNED_ROWS+=("| $name | $E | $er | $ep | 2^$best_k | $best_r | $best_p | $best_m |")
    else
      TUNED_ROWS+=("| $name | $E | $er | $ep | none | - | - | - |")
    fi
  done
  rm -f "$filled"
done

cat <<EOF
### ebzip vs zfp at the same absolute bound

Bound E = finite non-fill range x {1e-2, 1e-3, 1e-4, 1e-5}. Times: whole
processes, wall seconds, best of $REPS. PSNR over non-fill values. "+N fill":
fill values not restored bit for bit.

| field | abs bound | ebzip ratio | ebzip PSNR | ebzip max err | ebzip viol. | ebzip comp. s | ebzip decomp. s | zfp ratio | zfp PSNR | zfp max err | zfp viol. | zfp comp. s | zfp comp. s (omp=2) | zfp decomp. s |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
EOF
printf '%s\n' "${MAIN_ROWS[@]}"

cat <<EOF

### CPU seconds (user + system) of the same runs

Best of $REPS. Less sensitive than wall time to other work on the machine;
ebzip's compression and decompression run on every core, zfp's serially
except for "omp=2".

| field | abs bound | ebzip comp. | ebzip decomp. | zfp comp. | zfp comp. (omp=2) | zfp decomp. |
|---|---|---|---|---|---|---|
EOF
printf '%s\n' "${CPU_ROWS[@]}"

if [[ ${#FILLED_ROWS[@]} -gt 0 ]]; then
  cat <<EOF

### zfp with fill values replaced by the field's mean before compression

What a zfp user would have to do. zfp's ratio here does not include the fill
mask needed to put the fills back (counted as "+N fill"). "ebzip ratio,
fills→mean" compresses the same fill-replaced copy with ebzip (no fill value,
so no mask either): the ratio ebzip would reach if its predictor saw a smooth
stand-in instead of zeros at fill points.

| field | abs bound | ebzip ratio | ebzip PSNR | ebzip ratio, fills→mean | zfp ratio | zfp PSNR | zfp max err | zfp viol. |
|---|---|---|---|---|---|---|---|---|
EOF
  printf '%s\n' "${FILLED_ROWS[@]}"
fi

cat <<EOF

### zfp at its loosest tolerance that still meets the bound

zfp -a E keeps errors well below E. Here zfp runs at tolerance E x 2^k for the
largest k <= 10 whose reconstruction still has no violation of E (fill fields:
on the fill-replaced copy); ebzip stays at E.

| field | abs bound | ebzip ratio | ebzip PSNR | zfp tolerance / E | zfp ratio | zfp PSNR | zfp max err |
|---|---|---|---|---|---|---|---|
EOF
printf '%s\n' "${TUNED_ROWS[@]}"

# The gap array: ebzip's side channel for parallel Huffman decoding.
GAP_ROWS=()
etopo=$DATA/etopo5.cdf:ROSE
for rel in 1e-3 1e-4; do
  "$EBZIP" compress --quiet --rel "$rel" "$etopo" -o "$WORK/gap_on.ebz" >>"$LOG" 2>&1
  "$EBZIP" compress --quiet --rel "$rel" --gap_array=false "$etopo" -o "$WORK/gap_off.ebz" \
    >>"$LOG" 2>&1
  on=$(size_of "$WORK/gap_on.ebz")
  off=$(size_of "$WORK/gap_off.ebz")
  n=$(stat -c %s "$WORK/etopo5.raw")
  GAP_ROWS+=("| etopo5 | REL $rel | $(ratio "$n" "$on") | $(ratio "$n" "$off") |\
 $((on - off)) | $(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.2f", 100 * (a - b) / b }') |")
done
rm -f "$WORK/gap_on.ebz" "$WORK/gap_off.ebz"

cat <<EOF

### Gap array cost (etopo5)

| field | bound | ratio, gap array on | ratio, off | gap array bytes | size increase % |
|---|---|---|---|---|---|
EOF
printf '%s\n' "${GAP_ROWS[@]}"
