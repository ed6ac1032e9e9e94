-- Integration test: Neovim's built-in LSP client against `torchvet server`.
-- Run: TORCHVET=/path/to/torchvet TORCHVET_TEST_FILE=/tmp/x/train.py \
--      nvim --headless -u NONE -c "luafile editors/nvim/test_quickfix.lua"
-- Opens a buggy file, waits for the diagnostics, applies the quick fix for torch.load,
-- checks the buffer, waits for the re-check, and exits 0 (or 1 with a message).
local function fail(msg)
  io.stderr:write("nvim test FAILED: " .. msg .. "\n")
  vim.cmd("cquit 1")
end

local ok, err = pcall(function()
  local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
  local torchvet = dofile(here .. "torchvet.lua")
  vim.cmd("filetype on")
  torchvet.setup({ cmd = { os.getenv("TORCHVET"), "server" }, debounce_ms = 20 })
  vim.cmd("edit " .. os.getenv("TORCHVET_TEST_FILE"))
  local bufnr = vim.api.nvim_get_current_buf()
  assert(vim.bo[bufnr].filetype == "python", "filetype detected")

  local function has(name)
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.message:find("[" .. name .. "]", 1, true) then
        return d
      end
    end
    return nil
  end
  if not vim.wait(15000, function() return has("torch-load-without-weights-only") ~= nil end, 20) then
    return fail("no torch-load-without-weights-only diagnostic; got " .. vim.inspect(vim.diagnostic.get(bufnr)))
  end
  assert(has("missing-zero-grad"), "missing-zero-grad reported too")
  local d = has("torch-load-without-weights-only")

  -- Ask for the code actions at the cursor on the finding's line, as :lua vim.lsp.buf.code_action() does.
  vim.api.nvim_win_set_cursor(0, { d.lnum + 1, 0 })
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = { start = { line = d.lnum, character = 0 }, ["end"] = { line = d.lnum, character = 0 } },
    context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(bufnr, d.lnum) },
  }
  local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, 5000)
  local chosen
  for _, resp in pairs(responses or {}) do
    for _, action in ipairs(resp.result or {}) do
      if action.isPreferred and action.title:find("torch-load-without-weights-only", 1, true) then
        chosen = action
      end
    end
  end
  if not chosen then
    return fail("no preferred quick fix; got " .. vim.inspect(responses))
  end
  vim.lsp.util.apply_workspace_edit(chosen.edit, "utf-16")
  local line = vim.api.nvim_buf_get_lines(bufnr, d.lnum, d.lnum + 1, false)[1]
  if line ~= 'state = torch.load("ckpt.pt", weights_only=True)' then
    return fail("buffer line after the fix: " .. line)
  end
  -- The edit is sent to the server, which re-checks: the finding goes away.
  if not vim.wait(15000, function() return has("torch-load-without-weights-only") == nil end, 20) then
    return fail("the finding stayed after the fix")
  end
  assert(has("missing-zero-grad"), "the other finding stays")
  print("nvim: diagnostics received, quick fix applied, buffer updated, re-checked")
  io.stdout:write("nvim test passed\n")
end)
if not ok then
  fail(tostring(err))
else
  vim.cmd("qa!")
end
