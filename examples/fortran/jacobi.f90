! 2D Jacobi solver of -Δu = 1 on the unit square (u = 0 on the boundary), on an N x N
! interior grid whose rows are split over the ranks: the Fortran twin of
! examples/jacobi.rs and examples/c/jacobi.c, with the same numerics and the same
! checksum (XXH3-64 of the final global grid, row-major little-endian doubles).
! Row i of a rank is rows(:, i), so memory holds the rows one after the other.
!
! Build (from the repository root, against a prefix DIR installed by
! scripts/install.sh --prefix DIR with this MPI's Fortran wrapper beside its mpicc):
!   mpif90 -O2 examples/fortran/jacobi.f90 -o target/jacobi-f \
!     $(PKG_CONFIG_PATH=DIR/lib/pkgconfig pkg-config --cflags --libs rankmig-fortran) -lxxhash
program jacobi
  use, intrinsic :: iso_c_binding
  use mpi
  use rankmig                                     ! rankmig: the interface
  implicit none

  interface
    integer(c_int64_t) function xxh3_64bits(data, bytes) bind(C, name="XXH3_64bits")
      import :: c_int64_t, c_ptr, c_size_t
      type(c_ptr), value :: data
      integer(c_size_t), value :: bytes
    end function xxh3_64bits
  end interface

  integer :: ierr, comm, rank, ranks, n, local, i, j
  integer(c_int64_t), target :: iter
  integer(c_int64_t) :: iters
  real(c_double), allocatable, target :: rows(:, :), next(:, :), up(:), down(:)
  real(c_double) :: h, h2, left, right

  call MPI_Init(ierr)
  call parse_args(n, iters)
  if (rankmig_init(comm) /= 0) call fail('rankmig_init')   ! rankmig: instead of MPI_COMM_WORLD
  call MPI_Comm_rank(comm, rank, ierr)
  call MPI_Comm_size(comm, ranks, ierr)
  if (mod(n, ranks) /= 0) then
    write (0, '(a,i0,a,i0)') 'jacobi-f: ranks do not divide the grid size: ', ranks, ' / ', n
    call MPI_Abort(comm, 1, ierr)
  end if
  local = n / ranks
  allocate(rows(n, local), next(n, local), up(n), down(n))
  rows = 0d0
  up = 0d0
  down = 0d0
  iter = 0
  ! rankmig: the state; in a resumed process the saved values are copied in here
  if (rankmig_register_data('iter', c_loc(iter), int(8, c_size_t)) /= 0) call fail('register')
  if (rankmig_register_data('rows', c_loc(rows), int(8, c_size_t) * int(n, c_size_t) &
       * int(local, c_size_t)) /= 0) call fail('register')
  if (rank == 0 .and. rankmig_resumed() == 0) &                ! rankmig: set-up that runs once
       write (0, '(a,i0,a,i0,a)') 'jacobi-f: grid ', n, ', ', ranks, ' ranks'
  h = 1d0 / (dble(n) + 1d0)
  h2 = h * h
  do while (iter < iters)
    comm = rankmig_comm()                                      ! rankmig: changes at migrations
    call halo_exchange()
    do i = 1, local
      do j = 1, n
        if (j == 1) then
          left = 0d0
        else
          left = rows(j - 1, i)
        end if
        if (j == n) then
          right = 0d0
        else
          right = rows(j + 1, i)
        end if
        next(j, i) = 0.25d0 * ((above(j, i) + below(j, i)) + (left + right) + h2)
      end do
    end do
    rows = next
    iter = iter + 1
    if (rankmig_checkpoint() < 0) call fail('rankmig_checkpoint') ! rankmig: may save or move
  end do
  comm = rankmig_comm()
  if (rank == 0) write (0, '(a,i0)') 'jacobi-f: communicator generation ', &
       rankmig_generation()                                     ! rankmig: changes so far
  call print_checksum()
  if (rankmig_finalize() /= 0) call fail('rankmig_finalize')     ! rankmig
  call MPI_Finalize(ierr)

contains

  real(c_double) function above(j, i)
    integer, intent(in) :: j, i
    if (i == 1) then
      above = up(j)
    else
      above = rows(j, i - 1)
    end if
  end function above

  real(c_double) function below(j, i)
    integer, intent(in) :: j, i
    if (i == local) then
      below = down(j)
    else
      below = rows(j, i + 1)
    end if
  end function below

  subroutine halo_exchange()
    integer :: above_rank, below_rank
    above_rank = MPI_PROC_NULL
    below_rank = MPI_PROC_NULL
    if (rank > 0) above_rank = rank - 1
    if (rank + 1 < ranks) below_rank = rank + 1
    call MPI_Sendrecv(rows(1, 1), n, MPI_DOUBLE_PRECISION, above_rank, 0, down, n, &
         MPI_DOUBLE_PRECISION, below_rank, 0, comm, MPI_STATUS_IGNORE, ierr)
    call MPI_Sendrecv(rows(1, local), n, MPI_DOUBLE_PRECISION, below_rank, 1, up, n, &
         MPI_DOUBLE_PRECISION, above_rank, 1, comm, MPI_STATUS_IGNORE, ierr)
  end subroutine halo_exchange

  subroutine print_checksum()
    real(c_double), allocatable, target :: all(:, :)
    character(len=16) :: hex
    integer :: k
    if (rank == 0) then
      allocate(all(n, n))
    else
      allocate(all(1, 1))
    end if
    call MPI_Gather(rows, n * local, MPI_DOUBLE_PRECISION, all, n * local, &
         MPI_DOUBLE_PRECISION, 0, comm, ierr)
    if (rank == 0) then
      write (hex, '(z16.16)') xxh3_64bits(c_loc(all), int(8, c_size_t) * int(n, c_size_t) &
           * int(n, c_size_t))
      do k = 1, 16                                  ! lower case, as the C and Rust twins
        if (hex(k:k) >= 'A' .and. hex(k:k) <= 'F') hex(k:k) = achar(iachar(hex(k:k)) + 32)
      end do
      write (*, '(a,a)') 'checksum: ', hex
    end if
  end subroutine print_checksum

  subroutine parse_args(size, count)
    integer, intent(out) :: size
    integer(c_int64_t), intent(out) :: count
    character(len=64) :: flag, value
    integer :: k, status
    size = 256
    count = 100
    k = 1
    do while (k <= command_argument_count())
      call get_command_argument(k, flag)
      call get_command_argument(k + 1, value)
      select case (trim(flag))
      case ('--size')
        read (value, *, iostat=status) size
      case ('--iters')
        read (value, *, iostat=status) count
      case default
        status = 1
      end select
      if (status /= 0 .or. size <= 0 .or. count < 0) then
        write (0, '(a)') 'jacobi-f: bad argument ' // trim(flag) // ' ' // trim(value) // &
             ' (use --size N --iters K)'
        call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
      end if
      k = k + 2
    end do
  end subroutine parse_args

  subroutine fail(what)
    character(len=*), intent(in) :: what
    write (0, '(a)') 'jacobi-f: ' // what // ': ' // rankmig_last_error()
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end subroutine fail

end program jacobi
