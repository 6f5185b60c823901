# The fuzz targets, one per input format (fuzz_entries.cc defines each).
set(CAPPLAN_FUZZ_TARGETS
    scenario card profile measurements engine_run search_space slo grid
    trace_azure_2023 trace_azure_2024 trace_mooncake trace_burstgpt lengths summary
    import_vllm import_sglang import_guidellm import_inferencex server_log metrics_scrape
    version_drift calibration_overlay peer_predictions intervals)
