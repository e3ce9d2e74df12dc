# glmnet on the binary matrix svm2csc writes, y centred as strata_lasso centres it, no intercept,
# no standardisation: F(b) = 1/(2n)||y - Xb||^2 + lambda ||b||_1, glmnet's gaussian objective.
#   Rscript lasso_glmnet.R BIN fstar   LAMBDA_FRACTION THRESH OUT.json BETA.txt  # F*: lambda from lambda_max
#   Rscript lasso_glmnet.R BIN calibrate LAMBDA THRESH1,THRESH2,...             # F and fit time per thresh
#   Rscript lasso_glmnet.R BIN fit     LAMBDA THRESH                             # one timed fit, prints F
suppressPackageStartupMessages({ library(Matrix); library(glmnet) })
args <- commandArgs(trailingOnly = TRUE)
t0 <- proc.time()[["elapsed"]]
con <- file(args[1], "rb")
hdr <- readBin(con, "integer", n = 3, size = 8)
n <- hdr[1]; d <- hdr[2]; nnz <- hdr[3]
y <- readBin(con, "double", n = n)
p <- readBin(con, "integer", n = d + 1, size = 4)
i <- readBin(con, "integer", n = nnz, size = 4)
x <- readBin(con, "double", n = nnz)
close(con)
X <- new("dgCMatrix", i = i, p = p, x = x, Dim = c(as.integer(n), as.integer(d)))
rm(i, p, x); invisible(gc())
y <- y - mean(y)
t_read <- proc.time()[["elapsed"]] - t0
objective <- function(b, lambda) sum((y - as.vector(X %*% b))^2) / (2 * n) + lambda * sum(abs(b))
fit <- function(lambda, thresh) {
  t1 <- proc.time()[["elapsed"]]
  g <- glmnet(X, y, family = "gaussian", lambda = lambda, standardize = FALSE, intercept = FALSE,
              thresh = thresh, maxit = 1e7)
  b <- as.vector(coef(g))[-1]  # drop the (zero) intercept
  list(b = b, seconds = proc.time()[["elapsed"]] - t1, F = objective(b, lambda))
}
mode <- args[2]
if (mode == "fstar") {
  lambda_max <- max(abs(as.vector(crossprod(X, y)))) / n
  lambda <- as.numeric(args[3]) * lambda_max
  r <- fit(lambda, as.numeric(args[4]))
  nz <- which(r$b != 0)
  writeLines(sprintf('{"lambda_max": %.17g, "lambda_fraction": %s, "lambda": %.17g, "fstar": %.17g, "thresh": %s, "nnz": %d, "fit_seconds": %.3f, "read_seconds": %.3f}',
                     lambda_max, args[3], lambda, r$F, args[4], length(nz), r$seconds, t_read), args[5])
  writeLines(sprintf("%d %.17g", nz, r$b[nz]), args[6])
} else if (mode == "calibrate") {
  for (th in as.numeric(strsplit(args[4], ",")[[1]])) {
    r <- fit(as.numeric(args[3]), th)
    cat(sprintf("glmnet thresh=%g F=%.17g nnz=%d fit_seconds=%.3f\n", th, r$F, sum(r$b != 0), r$seconds))
  }
} else {
  r <- fit(as.numeric(args[3]), as.numeric(args[4]))
  cat(sprintf("glmnet summary: thresh=%s F=%.17g nnz=%d read_seconds=%.3f fit_seconds=%.3f\n", args[4], r$F, sum(r$b != 0), t_read, r$seconds))
}
