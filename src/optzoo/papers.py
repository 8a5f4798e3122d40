"""THE table of papers: one literal row per paper. No auto-registration.

``implemented`` is True only when the package, its tests, its docs page and its
reproduction exist; rows of papers not yet implemented say so and list no API.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PAPERS", "Paper", "get_paper", "implemented_papers"]

FIDELITIES = ("official-code", "paper", "reconstructed")


@dataclass(frozen=True)
class Paper:
    number: int
    slug: str
    title: str
    venue: str
    arxiv: str | None
    official_code: str | None
    fidelity: str  # one of FIDELITIES, optionally refined in `fidelity_note`
    fidelity_note: str
    kind: str
    headline: str  # the headline claim, in our words
    api: tuple[str, ...] = ()
    implemented: bool = False
    # the claims (ids in its reproduction's CLAIMS) that test the abstract's headline
    headline_claims: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        return f"optzoo.{self.slug}"

    @property
    def repro_module(self) -> str:
        return f"optzoo.{self.slug}.repro"


PAPERS: tuple[Paper, ...] = (
    Paper(1, "copro", "CoPro: constrained projection policy optimization for Pareto-front improvement",
          "ICML 2026", None, None, "reconstructed", "only the abstract is public",
          "RL / alignment trainer",
          "Projected policy updates improve every objective's Pareto front at once.",
          api=("STATUSES", "CoProConfig", "CoProEStep", "CoProLoss", "CoProTrainer", "OpAmpSpec",
               "ParetoArchive", "comparison_statistics", "copro_e_step", "copro_loss", "dual_objective", "k3_kl",
               "opamp_evaluate", "tabular_m_step"),
          headline_claims=("c1_stressed", "c2_drift", "c1_tool_use"),
          implemented=True),
    Paper(2, "ipgrm", "IP-GRM: independent-principle generative reward model (Unbiased Principles, Robust Rewards)",
          "ICML 2026", "2602.10019", "ShadeCloak/IP-GRM", "official-code", "",
          "reward model pipeline",
          "Principles generated from the question alone remove principle drift, and a principle cache makes it cheaper than coupled GRMs.",
          api=("CoupledGRMReward", "Criterion", "HFJudge", "IPGRMReward", "Judge", "JudgeError",
               "OpenAICompatJudge", "ParseStats", "PrincipleCache", "SimulatedJudge",
               "gold_quality", "grpo_advantages", "make_question", "measure_drift",
               "parse_principles", "parse_score", "render_coupled", "render_judge",
               "render_principles", "strip_think", "truncate_middle"),
          headline_claims=("drift_real",),
          implemented=True),
    Paper(3, "dks", "On densest k-subgraph mining and diagonal loading: optimization landscape and finite-step exact convergence",
          "ICML 2026", "2410.07388", "luqh357/DkS-Diagonal-Loading (AAAI predecessor)", "reconstructed",
          "paper for the relaxation and Frank-Wolfe (predecessor's code); reconstructed for the saddle-escape rule",
          "graph solver",
          "The diagonally loaded relaxation is tight for lambda >= 1 and saddle-escaping Frank-Wolfe reaches an integral local maximiser in finitely many steps.",
          api=("densest_k_subgraph", "frank_wolfe", "se_frank_wolfe", "adamw_dks", "greedy_peeling",
               "mip_dks", "eigenvector_topk", "truncated_power", "random_restart_fw", "upper_bounds",
               "swap_polish",
               "pairwise_round", "local_max_test", "read_graph", "Graph"),
          headline_claims=("tightness", "finite_step"),
          implemented=True),
    Paper(4, "comparison", "Finding stationary points by comparisons (classical and quantum oracle)",
          "ICML 2026", "2606.27082", None, "reconstructed", "only the abstract is public",
          "derivative-free optimizer",
          "Comparison oracles suffice to find epsilon-stationary points with dimension-dependent query bounds.",
          api=("ComparisonOracle", "comparison_minimize", "normalized_gradient", "normalized_hessian",
               "sign_probe", "trust_region_step", "iteration_budget", "gradient_cost", "hessian_cost",
               "cma_minimize", "nelder_mead_minimize", "QuantumQueryLedger", "phase_oracle",
               "fourier_sampling", "fundamental_probability", "GradientEstimate", "HessianEstimate"),
          headline_claims=("visits_within_budget", "eps_exponent_valley"),
          implemented=True),
    Paper(5, "zo_sgd", "Learning dynamics of zeroth-order optimization: a kernel (eNTK) perspective",
          "ICML 2026", "2605.03373", None, "reconstructed", "analysis reconstructed from the abstract",
          "optimizer + analysis",
          "Zeroth-order SGD follows the dynamics of an empirical NTK scaled by the probe distribution.",
          api=("ZOSGD", "zo_sgd_update", "zo_directions", "DISTRIBUTIONS", "empirical_ntk", "zo_entk",
               "zo_projections", "ZOProjections", "label_logits", "last_token_logits",
               "effective_rank", "zo_entk_variance", "expected_relative_error", "jl_entry_bound",
               "jl_perturbations_needed", "gradient_error", "expected_gradient_cosine",
               "one_step_prediction"),
          headline_claims=("error_vs_d", "output_size_not_d"),
          implemented=True),
    Paper(6, "talda", "TALDA: from Lyapunov analysis to algorithm design for two-sided PL minimax problems",
          "ICML 2026", None, None, "reconstructed", "only the abstract is public (TALDA-R is our reconstruction)",
          "minimax optimizer",
          "A single-loop method that enforces descent of a Lyapunov function converges linearly on two-sided PL problems.",
          api=("TwoSidedPL", "certified_rate", "lyapunov_terms", "agda_theory_rate", "talda_update",
               "talda_solve", "minimax_solve", "theory_steps", "MINIMAX_METHODS", "TALDA", "GDA",
               "AGDA", "ExtraGradient", "OptimisticGDA", "NotConvergedWarning"),
          headline_claims=("linear", "coupling", "weak_coupling_vs_gda"),
          implemented=True),
    Paper(7, "dpc4", "DP-C4: eliminating solution bias in differentially private optimization",
          "ICML 2026", None, None, "reconstructed", "update rule reconstructed; privacy accounting exact",
          "private optimizer + accountant",
          "Coupled clipping with error feedback removes the fixed-point bias of clipped DP-SGD at equal privacy.",
          api=("DPC4", "DPSGD", "ConstantClip", "DPC4State", "NoiseSchedule", "PoissonLoader",
               "PrivacyBudgetExceeded", "PrivacyLedger", "ShiftedDecay", "calibrate", "clip_rows",
               "dpc4_init", "dpc4_update", "dpsgd_update", "gaussian_dp_epsilon",
               "per_sample_grads", "rdp_epsilon"),
          headline_claims=("utility_sc", "less_noise", "convergence", "utility_nonconvex"),
          implemented=True),
    Paper(8, "context_tuning", "Context Tuning for in-context optimization (CT-Prompt, CT-KV)",
          "ICML 2026", "2507.04221", "agentic-learning-ai-lab/context-tuning", "official-code",
          "official code for CT-KV; CT-Prompt from the paper",
          "LM adaptation",
          "Initialising trainable context from the demonstrations beats ICL and prompt/prefix tuning.",
          api=("CTKV", "CTPrompt", "ContextTuning", "ContextTuningConfig", "TunedContext",
               "build_context", "cache_to_list", "make_cache"),
          headline_claims=("beats_prefix", "vs_ttt"),
          implemented=True),
    Paper(9, "momentum_tracking", "Provable suboptimality of momentum SGD in nonstationary optimization",
          "ICML 2026", "2601.12238", None, "reconstructed",
          "claims from the abstract, tested against an exact quadratic theory of our own; the paper's bounds are not transcribed",
          "analysis + simulator",
          "Under drift, momentum amplifies tracking error and plain SGD is better tuned.",
          api=("theory", "DriftingQuadratic", "TrackingHistory", "simulate", "run_tracking",
               "MSEParts", "Decomposition", "PhaseDiagram", "Recommendation", "stable_lr_max",
               "stationary_mse", "closed_form_mse", "tracking_error", "constant_drift_lag",
               "impulse_response", "worst_case_drift_gain", "adversarial_drift", "kalman_floor",
               "tuned_mse", "momentum_advantage", "regime_boundary", "curvature_spectrum",
               "recommend"),
          headline_claims=("minimax_drift",),
          implemented=True),
    Paper(10, "safe_kl", "Improved stochastic optimization of LogSumExp (Safe KL)",
          "ICML 2026", "2509.24894", "egorgladin/logsumexp-approx", "official-code", "",
          "loss / DRO / OT",
          "A KL-regularised LogSumExp surrogate with a scalar auxiliary variable removes minibatch bias stably.",
          api=("safe_kl_logsumexp", "safe_logsumexp", "safe_alpha", "exact_logsumexp",
               "minibatch_logsumexp", "sumexp_loss", "kl_dro_loss", "f_rho", "kappa_rho",
               "safe_kl_divergence", "SafeLogSumExp", "KLDROLoss", "semidiscrete_eot",
               "semi_dual_objective", "semi_dual_plan"),
          headline_claims=("sgd_gap", "stable_dro"),
          implemented=True),
    Paper(11, "dfl", "A solver-free training method for predict-then-optimize",
          "ICML 2026", "2606.19587", None, "reconstructed", "only the abstract is public",
          "decision-focused loss",
          "Decision-focused learning without calling the solver in training matches solver-based losses.",
          api=("LinearProgramModel", "FeasibleSetModel", "shortest_path_model", "knapsack_model", "tsp_model", "enumerate_tsp_tours",
               "portfolio_model",
               "pyepo_model", "enumerate_grid_paths", "enumerate_knapsack", "grid_arcs",
               "count_solver_calls", "SolverCallCounter", "SolverCallError", "precompute",
               "decision_regret", "train_predictor"),
          headline_claims=("competitive_fast_A",),
          implemented=True),
    Paper(12, "rpo", "Reparameterization Proximal Policy Optimization",
          "ICML 2026", "2508.06214", None, "paper", "partly from the paper",
          "RL with differentiable dynamics",
          "A PPO-style clipped surrogate over reparameterised gradients stabilises and speeds up RP policy learning.",
          api=("RPO", "SHAC", "RPOConfig", "shac_config", "rpo_actor_loss", "window_objective",
               "diag_gaussian_kl", "evaluate", "TrainHistory", "GaussianActor", "Critic",
               "RunningMeanStd", "DiffEnv", "PendulumSwingUp", "CartPoleSwingUp", "AcrobotSwingUp",
               "Reacher2D", "LQR", "as_gymnasium"),
          headline_claims=("rpo_vs_shac", "stable_reuse"),
          implemented=True),
    Paper(13, "stackelberg", "Rethinking neural-network learning rates: a Stackelberg perspective",
          "ICML 2026", "2605.15530", None, "reconstructed", "only the abstract is public",
          "optimizer / training recipe",
          "Treating layers as leader and follower yields per-layer learning rates that train faster.",
          api=("StackelbergGD", "ball_projection", "box_projection", "curvature",
               "exact_head_best_response", "head_features", "hessian_top_eig",
               "layer_decay_param_groups", "mup_sgd_param_groups", "split_head",
               "stackelberg_gd_update", "stackelberg_objective", "stackelberg_param_groups"),
          headline_claims=("speedup_teacher", "speedup_digits", "head_near_best_response",
                           "curvature_sharper"),
          implemented=True),
    Paper(14, "salaad", "SALAAD: sparse and low-rank adaptation via ADMM",
          "ICML 2026", "2602.00942", "HaoMAFRLu/salaad (CC BY-NC: never copied)", "official-code", "",
          "training-time compression",
          "ADMM splitting into sparse plus low-rank parts compresses models during training at small loss.",
          api=("Allocation", "BlockState", "Compressed", "CompressedBlock", "DEFAULT_TARGETS",
               "HiddenMarkovTask", "SALAAD", "SALAADConfig", "SALAADTrainer", "SLTrainModel",
               "SparseLowRankLinear", "admm_sweep", "allocate", "compress_blocks", "energy_rank",
               "magnitude_prune_compress", "rpca_compress", "rpca_decompose", "rpca_ialm",
               "sltrain_model", "soft_threshold", "svt", "truncated_svd_compress"),
          headline_claims=("comparable",),
          implemented=True),
    Paper(15, "reward_calibration", "Disentangled preference optimization: incentive-score decomposition and reward calibration",
          "ICML 2026", "2604.18239", "IceyWuu/DisentangledPreferenceOptimization", "official-code", "",
          "preference-loss wrapper",
          "Reward calibration keeps the chosen likelihood while lowering the rejected one.",
          api=("LOSS_TYPES", "Band", "LogLinearPolicy", "PreferenceLoss", "RCDPOConfig",
               "RCDPOTrainer", "RewardCalibrator", "band_edges", "disentanglement_band",
               "first_order_change", "incentives", "pairwise_loss", "preference_loss"),
          headline_claims=("rc_dpo", "rc_winner_after_transient", "rc_raises_winner_vs_base", "gold_reward"),
          implemented=True),
    Paper(16, "mo_bandit", "Divide & Learn: multi-objective combinatorial optimization at scale",
          "ICML 2026", "2602.11346", "esha-singh/Divide-and-Learn", "official-code", "",
          "combinatorial optimizer",
          "Position-wise bandits reach most of the hypervolume of specialised solvers with few evaluations.",
          api=("divide_and_learn", "DivideAndLearn", "bandit_regret", "DLConfig", "VARIANTS", "weight_vectors",
               "MOProblem", "Permutation", "Binary", "Categorical", "Oracle", "BudgetExhausted",
               "bi_tsp", "tri_tsp", "mo_tsp", "bi_knapsack", "bi_cvrp", "separable_categorical",
               "toy_accelerator", "hypervolume", "hv_ratio", "nondominated_mask"),
          headline_claims=("hv_vs_specialised", "vs_mobo_samples", "vs_mobo_cost"),
          implemented=True),
    Paper(17, "dynamic_gs", "Update mixture for explicit dynamic Gaussian splatting",
          "ICML 2026", None, None, "reconstructed", "only the abstract is public",
          "optimizer for splatting",
          "Under large motion, an update mixture for explicit dynamic splatting gives consistent "
          "improvements and reduced generalization issues.",
          api=("UpdateMixtureAdam", "mixture_adam_update", "StochasticAttributeAveraging",
               "RestateConfig", "RegSpec", "RowState", "make_optimizers", "check_visibility",
               "MaskedAdam", "sparse_row_grad", "rasterize", "project", "Camera", "look_at",
               "quat_to_rotmat", "init_stg", "stg_attributes", "render_stg", "spacetime_visibility",
               "STG_ATTRIBUTES", "init_keyframes", "keyframe_attributes", "render_keyframes",
               "keyframe_visibility", "keyframe_masks", "keyframe_weights", "psnr", "ssim"),
          headline_claims=("heldout_psnr", "generalization_gap"),
          implemented=True),
    Paper(18, "coarsening", "Incremental coarsening of discrete-time dynamic graphs",
          "ICML 2026", None, "abhigupta23/Dynamic-Graph-Coarsening", "official-code", "objectives from official code",
          "graph algorithm",
          "Incremental updates keep a coarsened graph in step with the stream at a fraction of the cost.",
          api=("DynamicCoarsener", "GraphEvents", "CoarseState", "fgc", "digc_update",
               "acnr_update", "epsilon_certificate", "coarse_features", "hard_assignment",
               "laplacian", "project_rows_simplex", "sparsify_rows", "naive_incremental",
               "heavy_edge_coarsen", "louvain_coarsen"),
          headline_claims=("update_speed", "memory", "accuracy_kept"),
          implemented=True),
    Paper(19, "markov_zo", "Zero-order methods under Markovian noise with randomized batching",
          "ICML 2026", "2601.01160", None, "reconstructed",
          "abstract only; randomized batching from the NeurIPS 2023 ancestor; exact variance law ours",
          "derivative-free optimizer",
          "With randomized batching, zero-order convergence does not depend on the mixing time when it is below the dimension.",
          api=("markov_zo_minimize", "MarkovZOSGD", "MarkovOracle", "StickyChain", "FiniteChain",
               "AR1Chain", "sphere_directions", "two_point_estimates", "one_point_estimates",
               "mlmc_weights", "expected_batch_cost", "strongly_convex_lr", "v_b", "batch_error",
               "mlmc_error", "predicted_ratio", "crossover_tau", "markov_sgd_minimize",
               "spsa_minimize"),
          headline_claims=("tau_independence", "zo_vs_fo_at_cost"),
          implemented=True),
)


def get_paper(slug: str) -> Paper:
    for p in PAPERS:
        if p.slug == slug:
            return p
    known = ", ".join(p.slug for p in PAPERS)
    raise KeyError(f"Unknown paper slug {slug!r}. Known slugs: {known}.")


def implemented_papers() -> list[Paper]:
    return [p for p in PAPERS if p.implemented]
