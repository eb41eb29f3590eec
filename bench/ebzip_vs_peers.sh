#!/usr/bin/env bash
# ebzip against its peers' command lines, SZ3 and zfp, on real fields at the
# same absolute bounds (docs/design.md §5: "on the CPU, the codec should beat zfp's
# own command line on the same real fields at the same absolute bound, in
# both ratio and time"; issue 23: ratio against SZ3).
#
# Usage: bench/ebzip_vs_peers.sh [BUILD_DIR] [WORK_DIR]
#   BUILD_DIR  holds client/cli/ebzip and bench/ebzip_export_field (default
#              build/); this script builds nothing.
#   WORK_DIR   scratch space for raw files and archives, and where the log
#              and results.csv stay (default: a new directory under /tmp,
#              removed at the end unless KEEP=1).
# Environment: DATA (default /usr/share/ferret-vis/data), REPS (timed runs
# per measurement, best kept; default 3), ZFP (default zfp), SZ3 (path of
# SZ3's command line, `sz3`; unset or not executable: SZ3 is skipped, with
# one line on stderr saying why), PLOTS (a directory: draw the rate-distortion
# PNGs there with bench/rd_plots.py at the end; PYTHON, default
# /usr/bin/python3, runs it).
#
# Markdown tables go to stdout; every command's output goes to WORK_DIR/log;
# one CSV row per (field, bound, compressor, input) to WORK_DIR/results.csv
# (columns in CSV_HEADER below), which bench/rd_plots.py reads.
#
# What is measured, per field and per bound E = range * {1e-2 .. 1e-5}
# (range: the finite, non-fill values' max - min, from ebzip_export_field):
#   ebzip  compress   --type f32 --shape S --abs E [--fill V] raw -> .ebz
#          decompress .ebz -> raw
#   SZ3    -f -i IN -z .sz -<rank> <dims fastest first> -M ABS E
#          -f -z .sz -o raw -<rank> <dims> -M ABS E
#          IN: the exporter's copy with fill values replaced by the field's
#          mean for fields with fill values (SZ3 has no notion of them), the
#          raw export otherwise.
#   zfp    -f -<rank> <dims fastest first> -a E -h  raw -> .zfp (serial, and
#          with -x omp=2 for compression, the only zfp stage OpenMP runs)
#          -h -z .zfp -o raw
# All whole processes, wall and CPU (user + system) time from bash's `time`,
# best of REPS rounds (the commands take turns, so background load hits all
# alike), reading and writing files in the page cache. Every reconstruction
# is judged by the same checker against the original export,
# `ebzip compare --abs E [--fill V]`: max error, PSNR over the non-fill
# values, violations of E over the non-fill values, and fill values not
# restored bit for bit (which SZ3, and zfp on the fill-replaced copy, never
# restore: they would need a mask that their ratio does not include).
set -euo pipefail

BUILD=${1:-build}
KEEP=${KEEP:-0}
if [[ $# -ge 2 ]]; then
  WORK=$2
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d /tmp/ebzip_vs_peers.XXXXXX)
fi
DATA=${DATA:-/usr/share/ferret-vis/data}
REPS=${REPS:-3}
ZFP=${ZFP:-zfp}
SZ3=${SZ3:-}
PLOTS=${PLOTS:-}
PYTHON=${PYTHON:-/usr/bin/python3}
EBZIP=$BUILD/client/cli/ebzip
EXPORT=$BUILD/bench/ebzip_export_field
LOG=$WORK/log
CSV=$WORK/results.csv
HERE=$(cd "$(dirname "$0")" && pwd)

for tool in "$EBZIP" "$EXPORT"; do
  [[ -x $tool ]] || { echo "missing $tool: build it first (ninja -C $BUILD)" >&2; exit 2; }
done
command -v "$ZFP" >/dev/null || { echo "missing zfp (apt-get install zfp)" >&2; exit 2; }
HAVE_SZ3=1
if [[ -z $SZ3 ]]; then
  HAVE_SZ3=0
  echo "SZ3 skipped: \$SZ3 is not set (give the path of SZ3's sz3 binary)" >&2
elif [[ ! -f $SZ3 || ! -x $SZ3 ]]; then
  HAVE_SZ3=0
  echo "SZ3 skipped: \$SZ3 ($SZ3) is not an executable file" >&2
fi
if [[ $# -lt 2 && $KEEP != 1 ]]; then trap 'rm -rf "$WORK"' EXIT; fi
: >"$LOG"
CSV_HEADER="field,source,rel,abs_bound,compressor,input,tolerance,ratio,bits_per_value,psnr_db,\
max_error,max_error_over_bound,violations,fill_mismatches,compress_wall_s,compress_cpu_s,\
compress_omp2_wall_s,compress_omp2_cpu_s,decompress_wall_s,decompress_cpu_s"
echo "$CSV_HEADER" >"$CSV"

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
bits() { awk -v r="$1" 'BEGIN { printf "%.4f", 32 / r }'; }
# over MAXERR E: max error / E, 4 decimals (so 1.0000 means within 5e-5 of E
# and a violation shows as > 1); in exponent form past 1000.
over() {
  awk -v m="$1" -v e="$2" 'BEGIN { x = m / e; printf (x < 1000 ? "%.4f" : "%.3g"), x }'
}

# check ORIG RECON E FILLARG...: "psnr|max error|violations|fill mismatches"
# (max error as `ebzip compare` prints it, 9 significant digits)
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
  echo "$psnr|$maxe|$viol|$spec"
}

# violations column: "V" or "V (+F fill)" when fill values were not restored.
viol_text() {
  if [[ $2 -gt 0 ]]; then echo "$1 (+$2 fill)"; else echo "$1"; fi
}

# csv_row FIELD REL E COMPRESSOR INPUT TOL RATIO PSNR MAXERR VIOL FILLS
#         [CW CC OW OC DW DC]: appends one row to results.csv.
csv_row() {
  local IFS=,
  local r=("$1" "$src_name" "$2" "$3" "$4" "$5" "$6" "$7" "$(bits "$7")" "$8" "$9" "$(over "$9" "$3")"
    "${10}" "${11}" "${12:-}" "${13:-}" "${14:-}" "${15:-}" "${16:-}" "${17:-}")
  echo "${r[*]}" >>"$CSV"
}

declare -A META
read_meta() {  # read_meta "k=v k=v ...": fills META
  META=()
  local kv
  for kv in $1; do META[${kv%%=*}]=${kv#*=}; done
}

MAIN_ROWS=()
TIME_ROWS=()
FILLED_ROWS=()
TUNED_ROWS=()
SZ3_INPUTS=()

sz3_version=""
[[ $HAVE_SZ3 == 1 ]] && sz3_version=", $("$SZ3" -v 2>&1 | head -1)"
echo "ebzip_vs_peers: $(date -u +%FT%TZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "$("$ZFP" 2>&1 | head -1)$sz3_version" >&2

for entry in "${FIELDS[@]}"; do
  name=${entry%%|*}
  src_name=${entry#*|}
  source=$DATA/$src_name
  raw=$WORK/$name.raw
  filled=$WORK/$name.filled.raw
  line=$("$EXPORT" "$source" "$raw" "$filled")
  echo "== $name: $line" | tee -a "$LOG" >&2
  read_meta "$line"
  shape=${META[shape]}
  rank=$(tr ',' '\n' <<<"$shape" | wc -l)
  IFS=, read -r -a dims <<<"${META[zfp_dims]}"  # fastest first, as zfp and SZ3 take them
  fill_args=()
  fill_count=${META[fill_count]}
  [[ ${META[fill]} != none ]] && fill_args=(--fill "${META[fill]}")
  raw_bytes=$(size_of "$raw")
  # The input SZ3 (and zfp's second run) get: fills replaced by the mean.
  peer_in=$raw peer_in_name=raw
  if [[ $fill_count -gt 0 ]]; then peer_in=$filled peer_in_name=fills-to-mean; fi
  if [[ $HAVE_SZ3 == 1 ]]; then
    if [[ $fill_count -gt 0 ]]; then
      SZ3_INPUTS+=("$name: the copy with its $fill_count fill values replaced by the mean ${META[mean]}")
    else
      SZ3_INPUTS+=("$name: the raw export (no fill values)")
    fi
    echo "-- $name: SZ3 input: $peer_in_name" >&2
  fi

  for rel in "${RELS[@]}"; do
    E=$(awk -v r="${META[range]}" -v e="$rel" 'BEGIN { printf "%.6g", r * e }')
    echo "-- $name E=$E (range x $rel)" >&2

    # The timed commands run in turn, REPS rounds, so that all codecs see
    # the same background load; each keeps its best time.
    ebz=$WORK/$name.ebz
    ebz_out=$WORK/$name.ebz.out
    sz=$WORK/$name.sz
    sz_out=$WORK/$name.sz.out
    zf=$WORK/$name.zfp
    zf_out=$WORK/$name.zfp.out
    zargs=(-f "-$rank" "${dims[@]}" -a "$E")
    sargs=(-f "-$rank" "${dims[@]}" -M ABS "$E")
    ec_wall="" ed_wall="" sc_wall="" sd_wall="" zc_wall="" zc2_wall="" zd_wall=""
    ec_cpu="" ed_cpu="" sc_cpu="" sd_cpu="" zc_cpu="" zc2_cpu="" zd_cpu=""
    for ((r = 0; r < REPS; ++r)); do
      keep_best ec "$EBZIP" compress --quiet -f --type f32 --shape "$shape" --abs "$E" \
        "${fill_args[@]}" "$raw" -o "$ebz"
      keep_best ed "$EBZIP" decompress --quiet -f "$ebz" -o "$ebz_out"
      if [[ $HAVE_SZ3 == 1 ]]; then
        keep_best sc "$SZ3" "${sargs[@]}" -i "$peer_in" -z "$sz"
        keep_best sd "$SZ3" "${sargs[@]}" -z "$sz" -o "$sz_out"
      fi
      # zfp, serial; compression also with 2 OpenMP threads (zfp 1.0 has no
      # OpenMP decompression).
      keep_best zc "$ZFP" "${zargs[@]}" -h -q -i "$raw" -z "$zf"
      keep_best zc2 "$ZFP" "${zargs[@]}" -x omp=2 -h -q -i "$raw" -z "$zf.omp"
      keep_best zd "$ZFP" -h -q -z "$zf" -o "$zf_out"
    done
    er=$(ratio "$raw_bytes" "$(size_of "$ebz")")
    IFS='|' read -r ep em ev es <<<"$(check "$raw" "$ebz_out" "$E" "${fill_args[@]}")"
    csv_row "$name" "$rel" "$E" ebzip raw "$E" "$er" "$ep" "$em" "$ev" "$es" \
      "$ec_wall" "$ec_cpu" "" "" "$ed_wall" "$ed_cpu"
    rm -f "$ebz_out"
    sz_cells="" sz_times=""
    if [[ $HAVE_SZ3 == 1 ]]; then
      sr=$(ratio "$raw_bytes" "$(size_of "$sz")")
      IFS='|' read -r sp sm sv ss <<<"$(check "$raw" "$sz_out" "$E" "${fill_args[@]}")"
      csv_row "$name" "$rel" "$E" sz3 "$peer_in_name" "$E" "$sr" "$sp" "$sm" "$sv" "$ss" \
        "$sc_wall" "$sc_cpu" "" "" "$sd_wall" "$sd_cpu"
      sz_cells=" $sr | $sp | $(over "$sm" "$E") | $(viol_text "$sv" "$ss") |"
      sz_times=" $sc_wall / $sc_cpu | $sd_wall / $sd_cpu |"
      rm -f "$sz" "$sz_out"
    fi
    zr=$(ratio "$raw_bytes" "$(size_of "$zf")")
    echo "== zfp -s $name E=$E: $("$ZFP" "${zargs[@]}" -i "$raw" -s 2>&1 | tail -1)" >>"$LOG"
    IFS='|' read -r zp zm zv zs <<<"$(check "$raw" "$zf_out" "$E" "${fill_args[@]}")"
    csv_row "$name" "$rel" "$E" zfp raw "$E" "$zr" "$zp" "$zm" "$zv" "$zs" \
      "$zc_wall" "$zc_cpu" "$zc2_wall" "$zc2_cpu" "$zd_wall" "$zd_cpu"
    rm -f "$zf_out" "$zf.omp"

    MAIN_ROWS+=("| $name | $rel | $E | $er | $ep | $(over "$em" "$E") | $(viol_text "$ev" "$es") |\
$sz_cells $zr | $zp | $(over "$zm" "$E") | $(viol_text "$zv" "$zs") |")
    TIME_ROWS+=("| $name | $rel | $ec_wall / $ec_cpu | $ed_wall / $ed_cpu |$sz_times\
 $zc_wall / $zc_cpu | $zc2_wall / $zc2_cpu | $zd_wall / $zd_cpu |")

    # zfp on the copy with fills replaced by the field's mean (SZ3's input),
    # judged against the original over the non-fill values (fills then count
    # as "not restored": a mask would do it).
    if [[ $fill_count -gt 0 ]]; then
      "$ZFP" "${zargs[@]}" -h -q -i "$filled" -z "$zf" -o "$zf_out" >>"$LOG" 2>&1
      zfr=$(ratio "$raw_bytes" "$(size_of "$zf")")
      IFS='|' read -r fp fm fv fs <<<"$(check "$raw" "$zf_out" "$E" "${fill_args[@]}")"
      csv_row "$name" "$rel" "$E" zfp fills-to-mean "$E" "$zfr" "$fp" "$fm" "$fv" "$fs"
      # The same copy through ebzip (no fill value): what ebzip's own fill
      # handling costs against a smooth stand-in.
      "$EBZIP" compress --quiet -f --type f32 --shape "$shape" --abs "$E" "$filled" -o "$ebz" \
        >>"$LOG" 2>&1
      "$EBZIP" decompress --quiet -f "$ebz" -o "$ebz_out" >>"$LOG" 2>&1
      efr=$(ratio "$raw_bytes" "$(size_of "$ebz")")
      IFS='|' read -r xp xm xv xs <<<"$(check "$raw" "$ebz_out" "$E" "${fill_args[@]}")"
      csv_row "$name" "$rel" "$E" ebzip fills-to-mean "$E" "$efr" "$xp" "$xm" "$xv" "$xs"
      FILLED_ROWS+=("| $name | $rel | $E | $er | $ep | $efr | $xp | $zfr | $fp |\
 $(over "$fm" "$E") | $(viol_text "$fv" "$fs") |")
      rm -f "$zf_out" "$ebz_out"
    fi

    # zfp's tolerance is conservative: the loosest E * 2^k (k <= 10) whose
    # reconstruction still meets E on every non-fill value (zfp's input is
    # the fill-replaced copy for fields with fills).
    best_k="" best_t="" best_r="" best_p="" best_m="" best_s=""
    for ((k = 0; k <= 10; ++k)); do
      tol=$(awk -v e="$E" -v k="$k" 'BEGIN { printf "%.9g", e * 2 ^ k }')
      "$ZFP" -f "-$rank" "${dims[@]}" -a "$tol" -h -q -i "$peer_in" -z "$zf" -o "$zf_out" \
        >>"$LOG" 2>&1
      IFS='|' read -r tp tm tv ts <<<"$(check "$raw" "$zf_out" "$E" "${fill_args[@]}")"
      [[ $tv -eq 0 ]] || break
      best_k=$k best_t=$tol best_r=$(ratio "$raw_bytes" "$(size_of "$zf")") best_p=$tp best_m=$tm
      best_s=$ts
    done
    rm -f "$zf_out" "$zf" "$ebz"
    if [[ -n $best_k ]]; then
      csv_row "$name" "$rel" "$E" zfp-loosest "$peer_in_name" "$best_t" "$best_r" "$best_p" \
        "$best_m" 0 "$best_s"
      TUNED_ROWS+=("| $name | $rel | $E | $er | $ep | 2^$best_k | $best_r | $best_p |\
 $(over "$best_m" "$E") |")
    else
      TUNED_ROWS+=("| $name | $rel | $E | $er | $ep | none | - | - | - |")
    fi
  done
  rm -f "$filled"
done

sz_head="" sz_rule="" sz_time_head="" sz_time_rule="" peers="ebzip and zfp" sz_got=""
if [[ $HAVE_SZ3 == 1 ]]; then
  peers="ebzip, SZ3 and zfp"
  sz_got=", and what SZ3 got above"
  sz_head=" SZ3 ratio | SZ3 PSNR | SZ3 max err / E | SZ3 viol. |"
  sz_rule="---|---|---|---|"
  sz_time_head=" SZ3 comp. | SZ3 decomp. |"
  sz_time_rule="---|---|"
fi

cat <<EOF
### $peers at the same absolute bound

Bound E = finite non-fill range x REL. PSNR, max error and violations over
the non-fill values, every reconstruction checked against the original
export by \`ebzip compare --abs E --fill V\`. "+N fill": fill values not
restored bit for bit. Ratio: raw float32 bytes / archive bytes (bits per
value = 32 / ratio). ebzip and zfp get the raw export (ebzip with
\`--fill V\`).
EOF
if [[ $HAVE_SZ3 == 1 ]]; then
  echo
  echo "SZ3 ($SZ3) gets, since it has no fill values:"
  echo
  printf -- '- %s\n' "${SZ3_INPUTS[@]}"
  echo
  echo "so on fields with fills its ratio leaves out the mask that would put the"
  echo "fills back, and every fill counts as \"+N fill\"."
else
  echo
  echo "SZ3: skipped (\$SZ3 not set or not executable)."
fi
cat <<EOF

| field | REL | abs bound E | ebzip ratio | ebzip PSNR | ebzip max err / E | ebzip viol. |$sz_head zfp ratio | zfp PSNR | zfp max err / E | zfp viol. |
|---|---|---|---|---|---|---|$sz_rule---|---|---|---|
EOF
printf '%s\n' "${MAIN_ROWS[@]}"

cat <<EOF

### Whole-process times of the same runs

Seconds, wall / CPU (user + system), best of $REPS, each command run as a
whole process on files in the page cache. CPU time is less sensitive than
wall time to other work on the machine; ebzip's compression and
decompression run on every core, SZ3's and zfp's serially except for zfp's
"omp=2".

| field | REL | ebzip comp. | ebzip decomp. |$sz_time_head zfp comp. | zfp comp. (omp=2) | zfp decomp. |
|---|---|---|---|$sz_time_rule---|---|---|
EOF
printf '%s\n' "${TIME_ROWS[@]}"

if [[ ${#FILLED_ROWS[@]} -gt 0 ]]; then
  cat <<EOF

### Fill values replaced by the field's mean before compression

What a zfp user would have to do$sz_got. zfp's ratio here
does not include the fill mask needed to put the fills back (counted as
"+N fill"). "ebzip, fills→mean" compresses the same fill-replaced copy with
ebzip (no fill value, so no mask either): the ratio ebzip would reach if its
predictor saw a smooth stand-in instead of the fills, judged the same way.

| field | REL | abs bound E | ebzip ratio | ebzip PSNR | ebzip ratio, fills→mean | ebzip PSNR, fills→mean | zfp ratio | zfp PSNR | zfp max err / E | zfp viol. |
|---|---|---|---|---|---|---|---|---|---|---|
EOF
  printf '%s\n' "${FILLED_ROWS[@]}"
fi

cat <<EOF

### zfp at its loosest tolerance that still meets the bound

zfp -a E keeps errors well below E. Here zfp runs at tolerance E x 2^k for the
largest k <= 10 whose reconstruction still has no violation of E (fill fields:
on the fill-replaced copy); ebzip stays at E.

| field | REL | abs bound E | ebzip ratio | ebzip PSNR | zfp tolerance / E | zfp ratio | zfp PSNR | zfp max err / E |
|---|---|---|---|---|---|---|---|---|
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
for entry in "${FIELDS[@]}"; do rm -f "$WORK/${entry%%|*}.raw"; done

cat <<EOF

### Gap array cost (etopo5)

| field | bound | ratio, gap array on | ratio, off | gap array bytes | size increase % |
|---|---|---|---|---|---|
EOF
printf '%s\n' "${GAP_ROWS[@]}"

echo "results: $CSV" >&2
if [[ -n $PLOTS ]]; then
  "$PYTHON" "$HERE/rd_plots.py" "$CSV" "$PLOTS" >&2
fi
