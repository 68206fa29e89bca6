"""docs/python-client.md holds every runner's parameter table as the runners define it and names
every runner's module and console script."""

from conftest import SOURCE_DIR

from dlbench_runners.params import runner_tables


def test_the_guide_holds_the_generated_parameter_tables():
    doc = (SOURCE_DIR / "docs/python-client.md").read_text()
    assert runner_tables() in doc, ("docs/python-client.md is out of date: replace its parameter tables with the "
                                    "output of `python3 -m dlbench_runners.params` (run in clients/python)")


def test_the_docs_name_every_runner_module_and_console_script():
    doc = (SOURCE_DIR / "docs/python-client.md").read_text()
    pyproject = (SOURCE_DIR / "clients/python/pyproject.toml").read_text()
    for module in ("torch", "jax", "onnxruntime", "spin"):
        assert "python3 -m dlbench_runners.%s" % module in doc
        assert "dlbench-py-%s = \"dlbench_runners.%s:main\"" % (module, module) in pyproject
        assert "dlbench-py-%s" % module in doc
