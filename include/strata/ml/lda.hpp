#pragma once
/// \file Collapsed Gibbs sampling kernels for LDA, written so that a distributed trainer can keep
/// the word-topic counts in external storage (parameter-server rows): the joint log-likelihood
/// split into per-document, per-word and topic-total parts that workers sum independently; a
/// plain O(K) token sampler (the reference); a SparseLDA bucket sampler (Yao, Mimno & McCallum,
/// KDD 2009) that touches only non-zero counts; a Metropolis–Hastings sampler with O(1) proposals
/// (LightLDA / WarpLDA style); and a sequential reference trainer.
///
/// The pieces, each of which can be included on its own:
///   - ml/lda_loglik.hpp: counts, hyperparameters, the log-likelihood's parts;
///   - ml/lda_sparse_sampler.hpp: the plain and the SparseLDA samplers;
///   - ml/lda_mh_sampler.hpp: the Metropolis–Hastings sampler;
///   - ml/lda_reference.hpp: the sequential reference trainer.
#include <strata/ml/lda_loglik.hpp>
#include <strata/ml/lda_mh_sampler.hpp>
#include <strata/ml/lda_reference.hpp>
#include <strata/ml/lda_sparse_sampler.hpp>
