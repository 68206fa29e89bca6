// Draws the charts of a dlbench HTML report from the JSON in the page's dlbench-data element, and
// makes the cells table sortable. Every text from the data reaches the page through Chart.js
// (canvas) or textContent, never as markup.
(function () {
  'use strict';
  var palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2',
                 '#7f7f7f', '#bcbd22', '#17becf'];

  function datasetConfig(ds, index) {
    var color = ds.color || palette[index % palette.length];
    var base = { label: ds.label, data: ds.data, borderColor: color, backgroundColor: color,
                 parsing: false, normalized: true };
    if (ds.kind === 'marker') {
      return Object.assign(base, { showLine: false, pointRadius: 9, pointHoverRadius: 10,
                                   pointStyle: ds.point_style || 'triangle', order: 0 });
    }
    if (ds.kind === 'vline') {
      return Object.assign(base, { showLine: true, pointRadius: 0, borderDash: [6, 4],
                                   borderWidth: 2, order: 0 });
    }
    if (ds.kind === 'clipped') {
      // Steps above the axis, drawn on its top edge (each point's own time is its `v`).
      return Object.assign(base, { showLine: false, pointRadius: 4, pointHoverRadius: 6,
                                   pointStyle: 'triangle', clip: false, order: 0 });
    }
    if (ds.kind === 'points') {
      return Object.assign(base, { showLine: false, pointRadius: 2, order: 1 });
    }
    return Object.assign(base, { showLine: true, pointRadius: ds.point_radius === undefined ? 0 : ds.point_radius,
                                 borderWidth: 1.5, order: 1 });
  }

  function axis(spec) {
    var out = { type: spec.type || 'linear', title: { display: true, text: spec.label } };
    if (typeof spec.min === 'number') out.min = spec.min;
    if (typeof spec.max === 'number') out.max = spec.max;
    return out;
  }

  // A clipped point says its own value, not the axis edge it is drawn on.
  function tooltipLabel(ctx) {
    var raw = ctx.raw || {};
    var y = typeof raw.v === 'number' ? raw.v : raw.y;
    return (ctx.dataset.label || '') + ': (' + raw.x + ', ' + y + ')';
  }

  // A horizontal stacked bar chart: one bar per label, one stacked part per dataset.
  function drawBarChart(canvas, spec) {
    // eslint-disable-next-line no-new
    new Chart(canvas.getContext('2d'), {
      type: 'bar',
      data: {
        labels: spec.labels,
        datasets: spec.datasets.map(function (ds, index) {
          var color = ds.color || palette[index % palette.length];
          return { label: ds.label, data: ds.data, backgroundColor: color, borderColor: color };
        })
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        indexAxis: 'y',
        scales: { x: Object.assign(axis(spec.x), { stacked: true }),
                  y: { type: 'category', stacked: true, title: { display: true, text: spec.y.label } } },
        plugins: { legend: { display: true, position: 'bottom' }, tooltip: { enabled: true } }
      }
    });
  }

  function drawChart(spec) {
    var canvas = document.getElementById(spec.id);
    if (!canvas) return;
    if (spec.type === 'bar') {
      drawBarChart(canvas, spec);
      return;
    }
    // eslint-disable-next-line no-new
    new Chart(canvas.getContext('2d'), {
      type: 'scatter',
      data: { datasets: spec.datasets.map(datasetConfig) },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: { x: axis(spec.x), y: axis(spec.y) },
        plugins: { legend: { display: spec.datasets.length > 1, position: 'bottom' },
                   tooltip: { enabled: true, callbacks: { label: tooltipLabel } } }
      }
    });
  }

  function sortable(table) {
    var headers = table.querySelectorAll('thead th');
    headers.forEach(function (th, column) {
      th.addEventListener('click', function () {
        var ascending = th.getAttribute('aria-sort') !== 'ascending';
        headers.forEach(function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[column].getAttribute('data-v');
          var y = b.cells[column].getAttribute('data-v');
          var nx = parseFloat(x), ny = parseFloat(y);
          var cmp = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
          return ascending ? cmp : -cmp;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  var data = JSON.parse(document.getElementById('dlbench-data').textContent);
  data.charts.forEach(drawChart);
  document.querySelectorAll('table.sortable').forEach(sortable);
})();
