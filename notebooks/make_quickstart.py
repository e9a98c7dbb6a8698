"""Writes notebooks/quickstart.ipynb and executes it to store its outputs.

Run with an interpreter that has capplan[notebook]: .venv/bin/python notebooks/make_quickstart.py
"""
from make_notebooks import write_executed  # the script's folder is on sys.path
from nbformat.v4 import new_code_cell, new_markdown_cell

cells = [
    new_markdown_cell(
        "# Quick start: size an internal assistant for ~50 colleagues\n\n"
        "The question: *we want an AI assistant for about 50 colleagues on one 8-GPU server — what fits?*\n"
        "capplan starts from a scenario (model, system, number formats, layout, workload) and answers with "
        "numbers that carry their units and sources."),
    new_code_cell("import capplan\ncapplan.__version__, capplan.catalog_version()"),
    new_markdown_cell("The built-in default scenario is exactly that question:"),
    new_code_cell("scenario = capplan.default_scenario()\nscenario"),
    new_code_cell("r = capplan.estimate(scenario)\nr"),
    new_markdown_cell(
        "Every size is a `Quantity`: it prints auto-scaled and converts explicitly. GB (10⁹ B) is not "
        "GiB (2³⁰ B)."),
    new_code_cell("w = r.memory.weights_bytes\nw, w.to('GiB'), r.memory.capacity_bytes"),
    new_markdown_cell(
        "Which accelerators can hold Llama-3.1-70B's weights on one 8-GPU node, in which number format? "
        "(Weights only: the KV cache for 50 concurrent users and the activations are added by the memory model.)"),
    new_code_cell(
        "rows = []\n"
        "for name in ['L40S', 'A100-80GB-SXM', 'H100-SXM', 'H200', 'MI300X', 'B200']:\n"
        "    for fmt in ['bf16', 'fp8', 'int4']:\n"
        "        res = capplan.estimate({'model': 'Llama-3.1-70B', 'system': {'accelerator': name, 'count': 8},\n"
        "                                'precision': {'weights': fmt}, 'parallelism': {'tp': 8}})\n"
        "        share = res.memory.weights_bytes / res.memory.capacity_bytes\n"
        "        verdict = 'ok' if 'feasible' not in res else 'NO: ' + res.reasons[0]\n"
        "        rows.append((name, fmt, str(res.memory.weights_bytes), f'{share:.0%}', verdict))\n"
        "for row in rows:\n"
        "    print(f'{row[0]:<14} {row[1]:<5} {row[2]:>9} per GPU  {row[3]:>4} of its memory  {row[4]}')"),
    new_markdown_cell(
        "**Answer so far:** in bf16 the 70B model's weights take 17.6 GB of each H200's 141 GB over tp=8 "
        "(13%), so most of the memory is left for the KV cache that 50 concurrent conversations need. "
        "Bad input gets a clear error naming the field:"),
    new_code_cell(
        "try:\n"
        "    capplan.estimate({'model': 'Lama-3.1-70B', 'system': {'accelerator': 'H200'}})\n"
        "except capplan.UnknownNameError as e:\n"
        "    print(e)"),
    new_markdown_cell(
        "## Explore\n\n"
        "Change the model, the accelerator and its count, the tensor-parallel degree, the context and the "
        "number of users at once: the table and the charts update as you go. (The controls need "
        "`pip install \"capplan[notebook]\"` and a live kernel; a viewer without one shows the starting "
        "estimate.) Try 200 users, or a 100,000-token context, and watch the KV cache take the memory."),
    new_code_cell("explorer = capplan.explorer(model='Llama-3.1-70B', accelerator='H200', count=8, tp=8,\n"
                  "                            context=8000, concurrency=50)\n"
                  "explorer"),
    new_markdown_cell("The explorer's current estimate is an ordinary result:"),
    new_code_cell("r = explorer.result\nr.memory.fits, r.inference.ttft_s, r.inference.tpot_s"),
]
write_executed("quickstart", cells)
