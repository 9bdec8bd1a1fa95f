# Outputs of Zheng, Achanta & Benjamini's own R code (arXiv 1606.05228) on inputs made here,
# for tests/test_stats_authors.py. Not run by the test suite: the authors' code is not part
# of ladderlab (their repository has no licence), so this script sources it from a checkout.
#
#   git clone https://github.com/snarles/fmri && git -C fmri checkout 43c81b184745ca7ea462400ef2d576967cc5b86b
#   Rscript tests/data/zheng-authors/make_fixtures.R fmri/extrapolation/simulation_source.R \
#       tests/data/zheng-authors/authors-outputs.json
#
# Needs R with pracma, nnls, nloptr, MASS, glmnet, nnet and jsonlite (Debian: r-cran-pracma
# r-cran-nnls r-cran-nloptr r-cran-glmnet r-cran-jsonlite; MASS and nnet come with R).
# The source file also loads kknn (its epsilon-nearest-neighbour classifier), which is not
# used here and is skipped.

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) stop("usage: make_fixtures.R SIMULATION_SOURCE_R OUTPUT_JSON")
authors <- new.env()
assign("library", function(package, ...) {
  name <- as.character(substitute(package))
  if (name != "kknn") base::library(name, character.only = TRUE)
}, envir = authors)
sys.source(args[1], envir = authors)

targets <- c(50, 100, 400)

# One input set: the authors' EXP, the four pseudolikelihood fits (their 51-point grid)
# and HD, each at every target K.
outputs_for <- function(Vs, k) {
  fits <- authors$fit_pm_models(Vs, k, us = authors$us, K = max(targets))
  moments <- function(gu) sapply(targets, function(K) sum(gu * authors$us^(K - 1)))
  loglik <- function(gu) {
    binprobs <- sapply(authors$us, function(u) dbinom(Vs, k, u))
    sum(log(binprobs %*% gu))
  }
  acck <- mean(Vs == k - 1)
  list(
    k = k,
    V = as.integer(Vs),
    K = targets,
    exp = authors$expmix_binmom(Vs, k, targets),
    mple = moments(fits$gu_mple), mple_masses = fits$gu_mple, mple_loglik = loglik(fits$gu_mple),
    cons = moments(fits$gu_mm), cons_masses = fits$gu_mm, cons_loglik = loglik(fits$gu_mm),
    hd = if (acck > 0 && acck < 1) sapply(targets, function(K) authors$extrapolate_hd(acck, k, K)) else NULL
  )
}

# Synthetic inputs: V ~ Binomial(k - 1, U), U ~ Beta(a, b), m test points.
set.seed(20160617)
designs <- expand.grid(k = c(3, 5, 10, 20, 30), shape = c("easy", "hard", "uniform"), stringsAsFactors = FALSE)
synthetic <- lapply(seq_len(nrow(designs)), function(i) {
  k <- designs$k[i]
  ab <- switch(designs$shape[i], easy = c(6, 1), hard = c(2, 1), uniform = c(1, 1))
  U <- rbeta(30 * k, ab[1], ab[2])
  c(outputs_for(rbinom(30 * k, k - 1, U), k), design = designs$shape[i])
})

# The authors' Figure 3 mixture (run_simulation.R: p = 10, sigma = 1, K = 50, 20 training and
# 30 test points per class) and their QDA and multinomial logistic classifiers' V on the first k
# classes, as pred_submodel and get_vij compute them.
set.seed(1606)
data <- authors$gen.data(p = 10, sigma = 1, K = 50, r1 = 20, r2 = 30)
figure3 <- list()
for (k in c(3, 5, 10, 20, 35)) {
  train <- data$Z1 %in% 1:k
  test <- data$Z2 %in% 1:k
  qda_fit <- MASS::qda(x = data$Ytr[train, ], grouping = data$Z1[train])
  qda_scores <- predict(qda_fit, data$Yte[test, ])$posterior
  glmnet_fit <- glmnet::glmnet(data$Ytr[train, ], data$Z1[train], family = "multinomial")
  glmnet_scores <- predict(glmnet_fit, data$Yte[test, ], s = 0)[, , 1]
  figure3[[length(figure3) + 1]] <- c(outputs_for(authors$get_vij(qda_scores, data$Z2), k), design = "figure3-qda")
  figure3[[length(figure3) + 1]] <- c(outputs_for(authors$get_vij(glmnet_scores, data$Z2), k), design = "figure3-logistic")
}

jsonlite::write_json(
  list(source = "snarles/fmri@43c81b184745ca7ea462400ef2d576967cc5b86b extrapolation/simulation_source.R",
       grid = authors$us, cases = c(synthetic, figure3)),
  args[2], digits = NA, auto_unbox = TRUE, pretty = FALSE)
